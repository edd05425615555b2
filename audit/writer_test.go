package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/redact"
)

func TestWriterConcurrentDeliveriesNeverInterleave(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root, Options{QueueSize: 16})
	const goroutines, each = 300, 10
	agents := []string{"ava", "S-000001", "S-000002", "S-00000a"}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				// Sizes from a few bytes to 100 KiB.
				n := (g*each + i) % 7 * (g % 5) * 300
				if (g*each+i)%97 == 0 {
					n = 100 << 10
				}
				body := strings.Repeat("z", n)
				e := text(day1, agents[g%len(agents)], fmt.Sprintf("%d/%d %s", g, i, body))
				if err := w.Deliver(e); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, skips := scanAll(t, DailyPath(root, day1))
	if len(skips) > 0 {
		t.Fatalf("skipped lines: %v", skips[0])
	}
	if len(evs) != goroutines*each {
		t.Fatalf("%d entries, want %d", len(evs), goroutines*each)
	}
	seen := map[string]bool{}
	for _, s := range texts(t, evs) {
		id, _, _ := strings.Cut(s, " ")
		if seen[id] {
			t.Fatalf("entry %s written twice", id)
		}
		seen[id] = true
	}
	for _, a := range agents[1:] {
		trace, skips := scanAll(t, TracePath(root, a))
		if len(skips) > 0 || len(trace) != goroutines*each/len(agents) {
			t.Errorf("trace %s: %d entries, %d skips; want %d, 0", a, len(trace), len(skips), goroutines*each/len(agents))
		}
		for _, e := range trace {
			if e.Agent != a {
				t.Fatalf("trace %s holds an entry of %s", a, e.Agent)
			}
		}
	}
	if _, err := os.Stat(TracePath(root, "ava")); !os.IsNotExist(err) {
		t.Errorf("the orchestrator got a trace file: %v", err)
	}
}

func TestWriterDeliverSyncIsOnDiskAtReturn(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root, Options{SyncInterval: time.Hour})
	if err := w.DeliverSync(text(day1, "S-abc123", "lifecycle")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{DailyPath(root, day1), TracePath(root, "S-abc123")} {
		evs, _ := scanAll(t, p)
		if got := texts(t, evs); len(got) != 1 || got[0] != "lifecycle" {
			t.Errorf("%s holds %q right after DeliverSync", p, got)
		}
	}
}

func TestWriterKeepsOnlyAuditTypesAndSetsModes(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root, Options{})
	writeAll(t, w,
		ev(day1, "ava", event.TextDelta, event.TextContent{Text: "partial"}),
		ev(day1, "ava", event.Activity, event.TextContent{Text: "reading"}),
		text(day1, "ava", "kept"))
	evs, _ := scanAll(t, DailyPath(root, day1))
	if got := texts(t, evs); len(got) != 1 || got[0] != "kept" {
		t.Errorf("log holds %q, want only the audit entry", got)
	}
	w.Close()
	for p, want := range map[string]os.FileMode{
		DailyPath(root, day1): 0o600, LogDir(root): 0o700, TraceDir(root): 0o700,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
}

func TestWriterAfterClose(t *testing.T) {
	w := newTestWriter(t, t.TempDir(), Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"Deliver": w.Deliver(text(day1, "ava", "x")), "DeliverSync": w.DeliverSync(text(day1, "ava", "x")), "Sync": w.Sync(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestWriterRejectsBadOptions(t *testing.T) {
	if _, err := NewWriter("", Options{}); err == nil {
		t.Error("empty root accepted")
	}
	if _, err := NewWriter(t.TempDir(), Options{QueueSize: -1}); err == nil {
		t.Error("negative queue size accepted")
	}
	w := newTestWriter(t, t.TempDir(), Options{})
	bad := text(day1, "ava", "x")
	bad.Content = []byte("{not json")
	if err := w.Deliver(bad); err == nil || !strings.Contains(err.Error(), "encode UserMessage") {
		t.Errorf("invalid content: %v", err)
	}
}

// openFDs counts this process's descriptors open on path.
func openFDs(t *testing.T, path string) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, de := range des {
		if target, err := os.Readlink("/proc/self/fd/" + de.Name()); err == nil && target == path {
			n++
		}
	}
	return n
}

func TestWriterRotatesAtUTCMidnight(t *testing.T) {
	root := t.TempDir()
	clock := &fakeClock{t: time.Date(2026, 11, 20, 23, 59, 59, 0, time.UTC)}
	w := newTestWriter(t, root, Options{Clock: clock.Now, SyncInterval: 5 * time.Millisecond})
	before := time.Date(2026, 11, 20, 23, 59, 59, 999_000_000, time.UTC)
	writeAll(t, w, text(before, "ava", "last of day one"))
	if openFDs(t, DailyPath(root, before)) != 1 {
		t.Fatal("day one's file is not open")
	}
	after := before.Add(2 * time.Millisecond)
	clock.Set(after)
	writeAll(t, w, text(after, "ava", "first of day two"))
	deadline := time.Now().Add(5 * time.Second)
	for openFDs(t, DailyPath(root, before)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("day one's file is still open after midnight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if openFDs(t, DailyPath(root, after)) != 1 {
		t.Error("day two's file is not open")
	}
	for p, want := range map[string]string{DailyPath(root, before): "last of day one", DailyPath(root, after): "first of day two"} {
		evs, _ := scanAll(t, p)
		if got := texts(t, evs); len(got) != 1 || got[0] != want {
			t.Errorf("%s holds %q, want %q", p, got, want)
		}
	}
	if filepath.Base(DailyPath(root, after)) != "2026-11-21.jsonl" {
		t.Errorf("day two file %s", DailyPath(root, after))
	}
}

func TestWriterBlocksWhenDiskIsSlowAndDropsNothing(t *testing.T) {
	root := t.TempDir()
	// The daily "file" is a FIFO nobody reads yet: writes block once the
	// pipe buffer is full, like a stalled disk.
	if err := os.MkdirAll(LogDir(root), 0o700); err != nil {
		t.Fatal(err)
	}
	path := DailyPath(root, day1)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	w := newTestWriter(t, root, Options{QueueSize: 2, Clock: func() time.Time { return day1 }})
	const total = 200
	var delivered atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			if err := w.Deliver(text(day1, "ava", fmt.Sprintf("%03d %s", i, strings.Repeat("p", 4000)))); err != nil {
				t.Error(err)
				return
			}
			delivered.Add(1)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	stalled := delivered.Load()
	if stalled >= total {
		t.Fatal("Deliver never blocked while the disk was stalled")
	}
	t.Logf("Deliver blocked after %d entries", stalled)
	// Unstall the disk: read everything.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got bytes.Buffer
	readDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			got.Write(buf[:n])
			if err != nil || bytes.Count(got.Bytes(), []byte{'\n'}) == total {
				readDone <- err
				return
			}
		}
	}()
	<-done
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-readDone; err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(got.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != total {
		t.Fatalf("%d lines came out, want %d", len(lines), total)
	}
	for i, l := range lines {
		var e event.Event
		if err := e.UnmarshalJSON(l); err != nil || !strings.HasPrefix(texts(t, []event.Event{e})[0], fmt.Sprintf("%03d ", i)) {
			t.Fatalf("line %d is not entry %d in order: %v", i+1, i, err)
		}
	}
}

func TestWriterDiskFullIsReportedAndExistingContentIntact(t *testing.T) {
	root := t.TempDir()
	var logs logBuffer
	w := newTestWriter(t, root, Options{Logger: logs.logger()})
	writeAll(t, w, text(day1, "ava", "safe one"), text(day1, "ava", "safe two"))
	before, err := os.ReadFile(DailyPath(root, day1))
	if err != nil {
		t.Fatal(err)
	}
	// The next day's file is /dev/full: every write fails with ENOSPC.
	day2 := day1.AddDate(0, 0, 1)
	if err := os.Symlink("/dev/full", DailyPath(root, day2)); err != nil {
		t.Fatal(err)
	}
	err = w.DeliverSync(text(day2, "ava", "does not fit"))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("DeliverSync on a full disk: %v, want ENOSPC", err)
	}
	if msg := err.Error(); !strings.Contains(msg, DailyPath(root, day2)) || !strings.Contains(msg, "the disk is full") {
		t.Errorf("the error does not name the file and say the disk is full: %q", msg)
	}
	if err := w.Deliver(text(day2, "ava", "later")); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("later Deliver: %v, want the write error", err)
	}
	if err := w.Sync(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Sync: %v", err)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "no space left") {
		t.Errorf("the error was not logged at Error: %q", logs.String())
	}
	after, err := os.ReadFile(DailyPath(root, day1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Error("the failure changed what was already in the log")
	}
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v, want the write error", err)
	}
}

func TestWriterRecoversWhenTheDiskDoes(t *testing.T) {
	root := t.TempDir()
	var logs logBuffer
	w := newTestWriter(t, root, Options{Logger: logs.logger()})
	// The trace directory is a file: opening any trace fails.
	if err := os.Remove(TraceDir(root)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(TraceDir(root), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.DeliverSync(text(day1, "S-dead01", "no trace")); err == nil {
		t.Fatal("DeliverSync succeeded without a trace directory")
	}
	if err := w.Deliver(text(day1, "ava", "meanwhile")); err == nil {
		t.Error("Deliver after a failure returned no error")
	}
	if err := os.Remove(TraceDir(root)); err != nil {
		t.Fatal(err)
	}
	if err := w.DeliverSync(text(day1, "S-dead01", "traced")); err != nil {
		t.Fatalf("DeliverSync after the fix: %v", err)
	}
	if err := w.Deliver(text(day1, "ava", "fine")); err != nil {
		t.Errorf("Deliver after recovery: %v", err)
	}
	if !strings.Contains(logs.String(), "recovered") {
		t.Errorf("recovery not logged: %q", logs.String())
	}
	evs, _ := scanAll(t, TracePath(root, "S-dead01"))
	if got := texts(t, evs); len(got) != 1 || got[0] != "traced" {
		t.Errorf("trace holds %q", got)
	}
}

func TestWriterStartsOnNewLineAfterATornFile(t *testing.T) {
	root := t.TempDir()
	path := DailyPath(root, day1)
	os.MkdirAll(LogDir(root), 0o700)
	good, _ := text(day1, "ava", "before crash").MarshalJSON()
	torn := append(append(good, '\n'), good[:20]...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, root, Options{})
	writeAll(t, w, text(day1, "ava", "after restart"))
	evs, skips := scanAll(t, path)
	if got := texts(t, evs); len(got) != 2 || got[1] != "after restart" {
		t.Errorf("entries %q", got)
	}
	if len(skips) != 1 || skips[0].Line != 2 || skips[0].File != path {
		t.Errorf("skips %v, want the torn line 2 reported", skips)
	}
}

func TestWriterRedactsSecrets(t *testing.T) {
	root := t.TempDir()
	secrets := []string{"tok-AVA-0123456789", "brave_xyz_98765", `we"ird\secret`}
	w := newTestWriter(t, root, Options{Secrets: secrets})
	anth := "sk-ant-api03-" + strings.Repeat("A1b2", 20)
	openai := "sk-proj-" + strings.Repeat("Zz9", 15)
	tg := "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	e := ev(day1, "S-5ec4e7", event.ToolCall, event.ToolCallContent{Name: "http", Args: []byte(
		fmt.Sprintf(`{"headers":{"Authorization":"Bearer %s","x-api-key":"%s"},"url":"https://api.telegram.org/bot%s/send","q":"%s"}`,
			"abcdEFGH1234.ijkl", anth, tg, "tok-AVA-0123456789"))})
	writeAll(t, w, e,
		text(day1, "ava", "my key is "+openai+"\nand "+anth+" and brave_xyz_98765 and "+`we"ird\secret`),
		ev(day1, "ava", event.Error, event.ErrorContent{Error: "401 from https://x: bad token Bearer eyJhbGciOiJI.UzI1NiJ9"}))
	w.Close()
	for _, p := range []string{DailyPath(root, day1), TracePath(root, "S-5ec4e7")} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(secrets, anth, openai, tg, "abcdEFGH1234", "eyJhbGciOiJI", `we\"ird\\secret`) {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s contains the secret %q", filepath.Base(p), s)
			}
		}
		if !bytes.Contains(data, []byte("Bearer "+redact.Redacted)) {
			t.Errorf("%s: bearer credential not masked as %q", p, "Bearer "+redact.Redacted)
		}
		if _, skips := scanAll(t, p); len(skips) > 0 {
			t.Errorf("redaction broke a line: %v", skips)
		}
	}
}

// TestOpenersNameTheFileInTheWay: with logs or sessions a regular file,
// NewWriter and NewSessionLogs fail at once with one line naming the
// directory they need and the file in its place, which they leave as it
// was.
func TestOpenersNameTheFileInTheWay(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(root string) error
		need func(root string) string
	}{
		{"logs", func(root string) error {
			w, err := NewWriter(root, Options{})
			if err == nil {
				w.Close()
			}
			return err
		}, LogDir},
		{"sessions", func(root string) error {
			_, err := NewSessionLogs(root, SessionOptions{})
			return err
		}, SessionDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			file := filepath.Join(root, c.name)
			if err := os.WriteFile(file, []byte("keep me\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := c.open(root)
			if err == nil {
				t.Fatal("opened with a file in the way")
			}
			msg := err.Error()
			for _, want := range []string{c.need(root), file + " is a file, not a directory"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if data, _ := os.ReadFile(file); string(data) != "keep me\n" {
				t.Errorf("the file in the way was changed: %q", data)
			}
		})
	}
}

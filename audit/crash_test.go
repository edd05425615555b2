package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
)

// crashHelper writes audit and lifecycle entries forever, printing an
// acknowledgement after each synchronous one, until it is killed.
func crashHelper(root string) error {
	w, err := NewWriter(root, Options{SyncInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	sl, err := NewSessionLogs(root, SessionOptions{})
	if err != nil {
		return err
	}
	big := strings.Repeat("x", 64<<10) // large writes make a torn line likely
	for i := 0; ; i++ {
		for j := range 4 {
			if err := w.Deliver(text(day1, "S-abcdef", fmt.Sprintf("bulk %d %d %s", i, j, big))); err != nil {
				return err
			}
		}
		if err := w.DeliverSync(text(day1, "S-abcdef", fmt.Sprintf("ack %d", i))); err != nil {
			return err
		}
		fmt.Printf("audit %d\n", i)
		e := LifecycleEntry{EventType: SubagentStart, JobID: fmt.Sprintf("job-%d", i), Mode: ModeSingle,
			StartedAt: day1, AgentName: "worker", Model: "m", Summary: big[:1000]}
		if err := sl.Append("ava:cli:crash", e); err != nil {
			return err
		}
		fmt.Printf("session %d\n", i)
	}
}

func startHelper(t *testing.T, mode, root string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "AUDIT_TEST_ROOT="+root)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func TestSIGKILLKeepsAcknowledgedEntries(t *testing.T) {
	root := t.TempDir()
	cmd, out := startHelper(t, "crash", root)
	acked := map[string]int{"audit": -1, "session": -1}
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		kind, n, _ := strings.Cut(sc.Text(), " ")
		i, err := strconv.Atoi(n)
		if err != nil {
			t.Fatalf("helper said %q", sc.Text())
		}
		acked[kind] = i
		if !killed && acked["audit"] >= 8 && acked["session"] >= 8 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true // acknowledgements already printed still count
		}
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper did not die by SIGKILL: %v", err)
	}

	for _, path := range []string{DailyPath(root, day1), TracePath(root, "S-abcdef")} {
		evs, skips := scanAll(t, path)
		checkAcked(t, path, texts(t, evs), "ack %d", acked["audit"])
		checkTorn(t, path, skips)
	}
	var jobs []string
	var skips []Skip
	if err := ScanLifecycle(SessionPath(root, "ava:cli:crash"), func(e LifecycleEntry) error {
		jobs = append(jobs, e.JobID)
		return nil
	}, func(s Skip) { skips = append(skips, s) }); err != nil {
		t.Fatal(err)
	}
	checkAcked(t, "session", jobs, "job-%d", acked["session"])
	checkTorn(t, "session", skips)

	// A new writer continues on a new line; a torn line stays one
	// reported skip.
	w := newTestWriter(t, root, Options{})
	if err := w.DeliverSync(text(day1, "S-abcdef", "after restart")); err != nil {
		t.Fatal(err)
	}
	sl, _ := NewSessionLogs(root, SessionOptions{})
	if err := sl.Append("ava:cli:crash", LifecycleEntry{EventType: SubagentStart, JobID: "job-after",
		Mode: ModeSingle, StartedAt: day1}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{DailyPath(root, day1), TracePath(root, "S-abcdef")} {
		evs, skips := scanAll(t, path)
		got := texts(t, evs)
		if got[len(got)-1] != "after restart" {
			t.Errorf("%s: last entry %q, want the one written after the restart", path, got[len(got)-1])
		}
		if len(skips) > 1 {
			t.Errorf("%s: %d skips after restart: %v", path, len(skips), skips)
		}
	}
	jobs = nil
	if err := ScanLifecycle(SessionPath(root, "ava:cli:crash"), func(e LifecycleEntry) error {
		jobs = append(jobs, e.JobID)
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if jobs[len(jobs)-1] != "job-after" {
		t.Errorf("session: last job %q, want job-after", jobs[len(jobs)-1])
	}
}

// checkAcked asserts that every acknowledged marker 0..last is present.
func checkAcked(t *testing.T, what string, got []string, format string, last int) {
	t.Helper()
	have := map[string]bool{}
	for _, s := range got {
		have[s] = true
	}
	for i := 0; i <= last; i++ {
		if m := fmt.Sprintf(format, i); !have[m] {
			t.Errorf("%s: acknowledged entry %q is missing", what, m)
		}
	}
	t.Logf("%s: %d acknowledged entries present", what, last+1)
}

// checkTorn asserts at most one skip, a torn last line.
func checkTorn(t *testing.T, what string, skips []Skip) {
	t.Helper()
	if len(skips) > 1 {
		t.Fatalf("%s: %d skipped lines, want at most one: %v", what, len(skips), skips)
	}
	for _, s := range skips {
		if !strings.Contains(s.Reason, "torn last line") {
			t.Errorf("%s: skip %v is not a torn last line", what, s)
		}
		t.Logf("%s: reader reported %v", what, Shorten(s.String(), 160))
	}
}

// fsizeHelper makes a real partial write with RLIMIT_FSIZE (the Go
// runtime ignores SIGXFSZ, so the write just fails with EFBIG after
// writing what fits) and checks that the writer reports it and continues
// on a new line.
func fsizeHelper(root string) error {
	w, err := NewWriter(root, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.DeliverSync(text(day1, "ava", "first")); err != nil {
		return err
	}
	fi, err := os.Stat(DailyPath(root, day1))
	if err != nil {
		return err
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		return err
	}
	small := syscall.Rlimit{Cur: uint64(fi.Size()) + 100, Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		return err
	}
	err = w.DeliverSync(text(day1, "ava", strings.Repeat("y", 1000)))
	if err == nil {
		return errors.New("write beyond RLIMIT_FSIZE succeeded")
	}
	fmt.Printf("failed: %v\n", err)
	if err := w.Deliver(text(day1, "ava", "lost")); err == nil {
		return errors.New("Deliver after a failed write returned no error")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		return err
	}
	if err := w.DeliverSync(text(day1, "ava", "after")); err != nil {
		return fmt.Errorf("write after the limit was lifted: %w", err)
	}
	return w.Close()
}

func TestPartialWriteNextEntryStartsOnNewLine(t *testing.T) {
	root := t.TempDir()
	cmd, out := startHelper(t, "fsize", root)
	said, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v (said %q)", err, said)
	}
	if !strings.Contains(string(said), "file too large") {
		t.Errorf("helper output %q does not report EFBIG", said)
	}
	evs, skips := scanAll(t, DailyPath(root, day1))
	got := texts(t, evs)
	// "lost" may or may not have been written before the limit was
	// lifted; "first" and "after" must be there, intact.
	if got[0] != "first" || got[len(got)-1] != "after" {
		t.Errorf("entries %q, want first ... after", got)
	}
	if len(skips) != 1 || skips[0].Line != 2 || !strings.Contains(skips[0].Reason, "not an audit entry") {
		t.Fatalf("skips %v, want the torn fragment reported at line 2", skips)
	}
	t.Logf("reported: %v", skips[0])
}

var _ = event.Error

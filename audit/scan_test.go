package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/event"
)

// writeLines writes a file from parts, each a line (a []byte is written
// as is, an event is marshalled and gets a newline).
func writeLines(t *testing.T, path string, parts ...any) {
	t.Helper()
	var buf bytes.Buffer
	for _, p := range parts {
		switch v := p.(type) {
		case []byte:
			buf.Write(v)
		case string:
			buf.WriteString(v)
		case event.Event:
			b, err := v.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestScanSkipsAndReportsBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	good, _ := text(day1, "ava", "torn").MarshalJSON()
	writeLines(t, path,
		text(day1, "ava", "one"),
		"{this is not json}\n",
		"\n", // blank lines are not entries and not errors
		`{"timestamp":"2026-11-20T14:05:30.123Z","content":{}}`+"\n",
		text(day1, "ava", "two"),
		"{\"big\":\""+strings.Repeat("b", MaxLineSize)+"\"}\n",
		text(day1, "ava", "three"),
		good[:len(good)/2])
	evs, skips := scanAll(t, path)
	if got := strings.Join(texts(t, evs), ","); got != "one,two,three" {
		t.Errorf("events %s, want one,two,three", got)
	}
	want := []struct {
		line   int
		reason string
	}{{2, "not an audit entry"}, {4, "no eventType"}, {6, "longer than"}, {8, "torn last line"}}
	if len(skips) != len(want) {
		t.Fatalf("skips %v", skips)
	}
	for i, w := range want {
		if skips[i].File != path || skips[i].Line != w.line || !strings.Contains(skips[i].Reason, w.reason) {
			t.Errorf("skip %d = %v, want line %d: %s", i, skips[i], w.line, w.reason)
		}
	}
	if s := skips[0].String(); !strings.HasPrefix(s, path+":2: ") {
		t.Errorf("Skip.String() = %q, want file:line: reason", s)
	}
}

func TestScanAcceptsCompleteLastLineWithoutNewline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	last, _ := text(day1, "ava", "no newline").MarshalJSON()
	writeLines(t, path, text(day1, "ava", "first\r"), last)
	evs, skips := scanAll(t, path)
	if got := texts(t, evs); len(got) != 2 || got[1] != "no newline" || len(skips) != 0 {
		t.Errorf("events %q skips %v", got, skips)
	}
}

func TestScanReadsLongLinesAndStopsOnCallbackError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	long := strings.Repeat("é", 3<<20) // 6 MiB, beyond bufio's buffer
	writeLines(t, path, text(day1, "ava", long), text(day1, "ava", "next"))
	evs, skips := scanAll(t, path)
	if got := texts(t, evs); len(got) != 2 || got[0] != long || len(skips) != 0 {
		t.Fatalf("long line not read back intact (%d events, skips %v)", len(got), skips)
	}
	stop := errors.New("stop")
	n := 0
	_, err := Scan(path, func(event.Event) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("Scan after callback error: %v after %d calls", err, n)
	}
	if _, err := Scan(filepath.Join(t.TempDir(), "missing"), func(event.Event) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestScanListsAtMostMaxSkips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	writeLines(t, path, strings.Repeat("garbage\n", maxSkips+5))
	_, skips := scanAll(t, path)
	if len(skips) != maxSkips+1 || !strings.Contains(skips[maxSkips].Reason, "5 more lines skipped") {
		t.Errorf("%d skips, last %v", len(skips), skips[len(skips)-1])
	}
}

package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/event"
)

// helperEnv selects a helper process mode when the test binary re-executes
// itself (see crash_test.go).
const helperEnv = "AUDIT_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

// day1 is a fixed test time (UTC).
var day1 = time.Date(2026, 11, 20, 14, 5, 30, 123_000_000, time.UTC)

// ev builds an event with content c.
func ev(t time.Time, agent string, typ event.Type, c any) event.Event {
	e := event.New(typ, c)
	e.Time, e.Agent, e.Session = t, agent, "ava:cli:test"
	if IsSubagentID(agent) {
		e.Session = "ava:subagent:" + agent
	}
	return e
}

// text is a UserMessage event with the given text.
func text(t time.Time, agent, s string) event.Event {
	return ev(t, agent, event.UserMessage, event.TextContent{Text: s})
}

// newTestWriter returns a writer closed at the end of the test.
func newTestWriter(t testing.TB, root string, opts Options) *Writer {
	t.Helper()
	if opts.SyncInterval == 0 {
		opts.SyncInterval = 10 * time.Millisecond
	}
	w, err := NewWriter(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// writeAll delivers evs and syncs.
func writeAll(t testing.TB, w *Writer, evs ...event.Event) {
	t.Helper()
	for _, e := range evs {
		if err := w.Deliver(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
}

// scanAll reads every event of a file.
func scanAll(t testing.TB, path string) ([]event.Event, []Skip) {
	t.Helper()
	var out []event.Event
	skips, err := Scan(path, func(e event.Event) error { out = append(out, e); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out, skips
}

// texts returns the UserMessage texts of evs.
func texts(t testing.TB, evs []event.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		var c event.TextContent
		if err := e.Decode(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Text)
	}
	return out
}

// keys returns the sorted keys of a JSON object.
func keys(t testing.TB, raw []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}

// logBuffer is a concurrency-safe buffer for a test logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// runHelper runs a helper process mode and returns its exit code.
func runHelper(mode string) int {
	var err error
	switch mode {
	case "crash":
		err = crashHelper(os.Getenv("AUDIT_TEST_ROOT"))
	case "fsize":
		err = fsizeHelper(os.Getenv("AUDIT_TEST_ROOT"))
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

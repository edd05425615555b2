package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
)

// logsNow is the test's "now" (UTC, so times print as stored).
var logsNow = time.Date(2026, 11, 20, 14, 10, 0, 0, time.UTC)

// logsBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type logsBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logsBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logsBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogsTestApp returns an App on root whose clock reads logsNow.
func newLogsTestApp(root string) (*App, *logsBuffer, *logsBuffer) {
	out, errb := &logsBuffer{}, &logsBuffer{}
	app := NewApp(strings.NewReader(""), out, errb, func(k string) string {
		if k == "AVA_DATA_ROOT" {
			return root
		}
		return ""
	})
	app.now = func() time.Time { return logsNow }
	return app, out, errb
}

func runLogsCmd(ctx context.Context, app *App, args ...string) error {
	cmd := newLogsCmd(app)
	cmd.SetArgs(args)
	cmd.SetOut(app.Stdout)
	cmd.SetErr(app.Stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(ctx)
}

func logsEvent(at time.Time, agent string, typ event.Type, c any) event.Event {
	e := event.New(typ, c)
	e.Time, e.Agent, e.Session = at, agent, "ava:cli:1"
	if audit.IsSubagentID(agent) {
		e.Session = "ava:subagent:" + agent
	}
	return e
}

// logsFixture writes eight entries over two days and returns the root
// and the writer (open, for follow tests).
func logsFixture(t *testing.T) (string, *audit.Writer) {
	t.Helper()
	root := t.TempDir()
	w, err := audit.NewWriter(root, audit.Options{SyncInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 20, h, m, s, 0, time.UTC) }
	old := logsEvent(time.Date(2026, 11, 19, 10, 0, 0, 0, time.UTC), "ava", event.UserMessage, event.TextContent{Text: "old question"})
	old.User = "ben"
	for _, e := range []event.Event{
		old,
		logsEvent(at(13, 0, 0), "ava", event.UserMessage, event.TextContent{Text: "research pricing"}),
		logsEvent(at(14, 5, 29), "ava", event.SubagentSpawn, event.SubagentSpawnContent{SubagentID: "S-7f3a2b", Role: "web_crawler", Task: "pricing", Model: "anthropic/haiku", Mode: "single"}),
		logsEvent(at(14, 5, 30), "S-7f3a2b", event.ToolCall, event.ToolCallContent{Name: "web_search", Args: json.RawMessage(`{"query":"podcast pricing"}`)}),
		logsEvent(at(14, 5, 32), "S-7f3a2b", event.ToolResult, event.ToolResultContent{Name: "web_search", Success: true, Output: strings.Repeat("r", 1234)}),
		logsEvent(at(14, 6, 0), "S-7f3a2b", event.Error, event.ErrorContent{Error: "fetch failed"}),
		logsEvent(at(14, 7, 45), "ava", event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-7f3a2b", Status: "success", Tokens: 45000, CostCents: 24, DurationMs: 136000}),
		logsEvent(at(14, 8, 0), "S-9e4c1d", event.AssistantMessage, event.TextContent{Text: "other sub"}),
	} {
		if err := w.Deliver(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	return root, w
}

func TestLogsCommandFlags(t *testing.T) {
	root, _ := logsFixture(t)
	trace := []string{
		`[14:05:30] ToolCall web_search {"query": "podcast pricing"}`,
		`[14:05:32] ToolResult web_search (success, 1234 chars)`,
		`[14:06:00] Error: fetch failed`,
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"default shows all agents with dates", nil, []string{
			`[2026-11-19 10:00:00] ava      UserMessage (ben) old question`,
			`[2026-11-20 13:00:00] ava      UserMessage research pricing`,
			`[2026-11-20 14:05:29] ava      SubagentSpawn S-7f3a2b role=web_crawler model=anthropic/haiku mode=single "pricing"`,
			`[2026-11-20 14:05:30] S-7f3a2b ToolCall web_search {"query": "podcast pricing"}`,
			`[2026-11-20 14:05:32] S-7f3a2b ToolResult web_search (success, 1234 chars)`,
			`[2026-11-20 14:06:00] S-7f3a2b Error: fetch failed`,
			`[2026-11-20 14:07:45] ava      SubagentComplete S-7f3a2b status=success cost=24.0¢ tokens=45000 duration=2m16s`,
			`[2026-11-20 14:08:00] S-9e4c1d AssistantMessage other sub`,
		}},
		{"subagent trace", []string{"S-7f3a2b"}, trace},
		{"subagent prefix", []string{"7f3a"}, trace},
		{"last", []string{"--last", "2", "--since", "today"}, []string{
			`[14:07:45] ava      SubagentComplete S-7f3a2b status=success cost=24.0¢ tokens=45000 duration=2m16s`,
			`[14:08:00] S-9e4c1d AssistantMessage other sub`,
		}},
		{"type error", []string{"--type", "error"}, []string{`[14:06:00] S-7f3a2b Error: fetch failed`}},
		{"types comma and repeated", []string{"--type", "toolcall,TOOLRESULT", "--type", "Error", "S-7f3a2b"}, trace},
		{"since ago", []string{"--since", "1 hour ago", "--agent", "ava"}, []string{
			`[14:05:29] SubagentSpawn S-7f3a2b role=web_crawler model=anthropic/haiku mode=single "pricing"`,
			`[14:07:45] SubagentComplete S-7f3a2b status=success cost=24.0¢ tokens=45000 duration=2m16s`,
		}},
		{"since and until", []string{"--since", "1h", "--until", "2026-11-20 14:05:30", "S-7f3a2b"}, trace[:1]},
		{"search", []string{"--search", "OTHER SUB"}, []string{`[14:08:00] S-9e4c1d AssistantMessage other sub`}},
		{"session", []string{"--session", "ava:cli:1", "--since", "yesterday", "--type", "UserMessage"}, []string{
			`[2026-11-19 10:00:00] ava      UserMessage (ben) old question`,
			`[2026-11-20 13:00:00] ava      UserMessage research pricing`,
		}},
		{"agent subagent", []string{"--agent", "S-9e4c1d"}, []string{`[14:08:00] AssistantMessage other sub`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, out, errb := newLogsTestApp(root)
			if err := runLogsCmd(context.Background(), app, tc.args...); err != nil {
				t.Fatalf("ava logs %v: %v (stderr %q)", tc.args, err, errb.String())
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("ava logs %v\n got:\n%s\nwant:\n%s", tc.args, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if strings.Contains(out.String(), "\x1b[") {
				t.Error("colour written to a non-terminal")
			}
		})
	}
}

func TestLogsCommandJSONIsTheStoredLine(t *testing.T) {
	root, _ := logsFixture(t)
	app, out, _ := newLogsTestApp(root)
	if err := runLogsCmd(context.Background(), app, "--json", "--type", "Error"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(audit.DailyPath(root, logsNow))
	if err != nil {
		t.Fatal(err)
	}
	var stored string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, `"eventType":"Error"`) {
			stored = line
		}
	}
	if out.String() != stored+"\n" {
		t.Errorf("--json printed %q, want the stored line %q", out.String(), stored)
	}
}

func TestLogsCommandErrors(t *testing.T) {
	root, _ := logsFixture(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"S-ffffff"}, "S-ffffff has no trace (looked for " + audit.TracePath(root, "S-ffffff") + "): file does not exist: no such subagent in the logs of the data root " + root},
		{[]string{"S-ff"}, "no subagent trace matches"},
		{[]string{"S-zz"}, "not a subagent ID"},
		{[]string{"--type", "bogus"}, "--type: unknown event type \"bogus\""},
		{[]string{"--since", "last tuesday"}, `--since: cannot read time "last tuesday": use "1 hour ago"`},
		{[]string{"--until", "soon"}, "--until: cannot read time"},
		{[]string{"--since", "today", "--until", "yesterday"}, "is before since"},
		{[]string{"--last", "-3"}, "--last -3"},
		{[]string{"S-7f3a2b", "--agent", "S-9e4c1d"}, "contradicts"},
		{[]string{"a", "b"}, "accepts at most 1 arg"},
	} {
		app, out, _ := newLogsTestApp(root)
		err := runLogsCmd(context.Background(), app, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ava logs %v: %v, want %q", tc.args, err, tc.msg)
		}
		if out.String() != "" {
			t.Errorf("ava logs %v printed %q", tc.args, out.String())
		}
	}
}

func TestLogsCommandWarnsAboutSkippedLines(t *testing.T) {
	root, _ := logsFixture(t)
	path := audit.DailyPath(root, logsNow)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"timestamp":"2026-11-20T14:09:00.000Z","eventType":"Err`)
	f.Close()
	app, out, errb := newLogsTestApp(root)
	if err := runLogsCmd(context.Background(), app, "--since", "today"); err != nil {
		t.Fatal(err)
	}
	if want := "warning: skipped " + path + ":8: torn last line"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	if n := strings.Count(out.String(), "\n"); n != 7 {
		t.Errorf("%d entries shown, want the 7 good ones of today", n)
	}
}

func TestLogsCommandEmptyDataRoot(t *testing.T) {
	app, out, errb := newLogsTestApp(t.TempDir())
	if err := runLogsCmd(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	if out.String() != "" || !strings.Contains(errb.String(), "no matching log entries") {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
}

func TestLogsCommandFollow(t *testing.T) {
	root, w := logsFixture(t)
	app, out, errb := newLogsTestApp(root)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runLogsCmd(ctx, app, "-f", "--last", "1", "--type", "Error,AssistantMessage") }()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				cancel()
				<-done
				t.Fatalf("follow output %q never showed %q (stderr %q)", out.String(), want, errb.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("[14:08:00] S-9e4c1d AssistantMessage other sub\n")
	live := logsEvent(logsNow, "S-7f3a2b", event.Error, event.ErrorContent{Error: "live failure"})
	if err := w.DeliverSync(live); err != nil {
		t.Fatal(err)
	}
	if err := w.DeliverSync(logsEvent(logsNow, "ava", event.UserMessage, event.TextContent{Text: "filtered out"})); err != nil {
		t.Fatal(err)
	}
	waitFor("[14:10:00] S-7f3a2b Error: live failure\n")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow ended with %v", err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 || strings.Contains(out.String(), "filtered out") {
		t.Errorf("follow output %q: want the last entry then the live one", out.String())
	}
}

// The error for an unknown subagent promises no command that needs a
// daemon, and is a usage error (exit 2) as an unknown ID is everywhere.
func TestLogsUnknownSubagentSaysSomethingTrue(t *testing.T) {
	root, _ := logsFixture(t)
	app, _, errb := newLogsTestApp(root)
	if code := Main(context.Background(), []string{"logs", "S-ffffff"}, app); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if strings.Contains(errb.String(), "ava ps") || !strings.Contains(errb.String(), "ava logs --type SubagentSpawn") || !strings.Contains(errb.String(), "no such subagent in the logs of the data root "+root) {
		t.Errorf("stderr %q", errb.String())
	}
}

// ava logs on a data root that does not exist says so, exits 1, and
// creates nothing.
func TestLogsMissingDataRootCreatesNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "nowhere", "ava")
	for _, args := range [][]string{{"logs"}, {"logs", "S-7f3a2b"}, {"logs", "-f"}} {
		app, out, errb := newLogsTestApp(root)
		code := Main(context.Background(), args, app)
		if code != 1 || !strings.Contains(errb.String(), "no data root at "+root) || out.String() != "" {
			t.Errorf("ava %v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
		if _, err := os.Stat(filepath.Dir(root)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ava %v created %s (stat: %v)", args, filepath.Dir(root), err)
		}
	}
}

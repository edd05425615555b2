package logs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/tool/logs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReadAvaLogs(t *testing.T) {
	root := t.TempDir()
	now := time.Now().UTC()
	w, err := audit.NewWriter(root, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(agent string, typ event.Type, c any, at time.Time) {
		ev := event.New(typ, c)
		ev.Session, ev.Agent, ev.Time = "ava:cli:1", agent, at
		if err := w.Deliver(ev); err != nil {
			t.Fatal(err)
		}
	}
	write("ava", event.UserMessage, event.TextContent{Text: "old question"}, now.Add(-3*time.Hour))
	write("S-7f3a2b", event.ToolCall, event.ToolCallContent{ID: "1", Name: "web_search", Args: json.RawMessage(`{"query":"pricing"}`)}, now.Add(-time.Minute))
	write("ava", event.Error, event.ErrorContent{Error: "the model timed out"}, now.Add(-30*time.Second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tl := logs.New(audit.NewReader(root, audit.ReaderOptions{}), func() time.Time { return now })
	run := func(args string) string {
		t.Helper()
		res, err := tl.Run(context.Background(), json.RawMessage(args))
		if err != nil || res.IsError {
			t.Fatalf("%s: %+v %v", args, res, err)
		}
		return res.Output
	}
	if out := run(`{"subagent_id":"S-7f3a2b"}`); !strings.Contains(out, "web_search") || strings.Contains(out, "timed out") {
		t.Fatalf("trace: %s", out)
	}
	if out := run(`{"search":"TIMED","since":"1h"}`); !strings.Contains(out, "the model timed out") || strings.Contains(out, "old question") {
		t.Fatalf("search: %s", out)
	}
	if out := run(`{"last_n":1}`); strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "timed out") {
		t.Fatalf("last_n: %s", out)
	}
	if out := run(`{"types":["usermessage"]}`); !strings.Contains(out, "old question") || strings.Contains(out, "timed out") {
		t.Fatalf("types: %s", out)
	}
	for _, bad := range []string{`{"subagent_id":"nope"}`, `{"last_n":10000}`, `{"since":"whenever"}`, `{"types":["Gossip"]}`} {
		res, err := tl.Run(context.Background(), json.RawMessage(bad))
		if err != nil || !res.IsError {
			t.Errorf("%s accepted: %+v", bad, res)
		}
	}
}

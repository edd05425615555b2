package terminal_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
)

// TestFromClient: a daemon's subagent becomes the core's view field for
// field, so that it renders as one of this process does.
func TestFromClient(t *testing.T) {
	at := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	in := client.Subagent{ID: "S-7f3a2b", SessionKey: "ava:subagent:S-7f3a2b", Role: "researcher", Task: "look", Model: "scripted/demo",
		Mode: "single", Parent: "ava:web:1", Status: "success", QueuePosition: 2, Stalled: true, WaitingForUser: true,
		Iteration: 3, Tokens: 1234, CostCents: 2.5, ElapsedMs: 14_000, Activity: "reading", LastTool: "read_file",
		CreatedAt: at, StartedAt: at.Add(time.Second), EndedAt: at.Add(time.Minute),
		Result: json.RawMessage(`{"summary":"done","status":"success"}`), Error: "none", Attempts: 1, Live: true}
	want := ava.Subagent{ID: "S-7f3a2b", SessionKey: "ava:subagent:S-7f3a2b", Role: "researcher", Task: "look", Model: "scripted/demo",
		Mode: "single", Parent: "ava:web:1", Status: lifecycle.Success, QueuePosition: 2, Stalled: true, WaitingForUser: true,
		Figures:  ava.Figures{Iterations: 3, Tokens: 1234, CostCents: 2.5, Elapsed: 14 * time.Second},
		Activity: "reading", LastTool: "read_file", CreatedAt: at, StartedAt: at.Add(time.Second), EndedAt: at.Add(time.Minute),
		Result: &ava.Result{Summary: "done", Status: lifecycle.Success}, Error: "none", Attempts: 1, Live: true}
	if diff := cmp.Diff(want, terminal.FromClient(in)); diff != "" {
		t.Fatalf("FromClient (-want +got):\n%s", diff)
	}
	in.Result = json.RawMessage(`"not a result"`)
	if got := terminal.FromClient(in); got.Result != nil {
		t.Fatalf("a malformed result became %+v", got.Result)
	}
}

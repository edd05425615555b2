package subagent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// bashTool is a run_bash that records the arguments it ran with.
type bashTool struct {
	mu  sync.Mutex
	ran []json.RawMessage
}

func (b *bashTool) Name() string            { return "run_bash" }
func (b *bashTool) Description() string     { return "runs a command" }
func (b *bashTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (b *bashTool) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	b.mu.Lock()
	b.ran = append(b.ran, args)
	b.mu.Unlock()
	return tool.Result{Output: "done"}, nil
}

func (b *bashTool) runs() []json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]json.RawMessage(nil), b.ran...)
}

// callAsync runs the gated tool as the orchestrator in the background.
func callAsync(g tool.Tool, args string) <-chan tool.Result {
	out := make(chan tool.Result, 1)
	go func() {
		res, err := g.Run(tool.WithCaller(context.Background(), parent), json.RawMessage(args))
		if err != nil {
			res = tool.Result{Output: "go error: " + err.Error(), IsError: true}
		}
		out <- res
	}()
	return out
}

// pendingProcess waits for the session's one pending process proposal.
func pendingProcess(t *testing.T, h *harness) subagent.Proposal {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ps, err := h.m.Proposals(context.Background(), parent.SessionKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 1 {
			return ps[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no process proposal")
	return subagent.Proposal{}
}

// A long run_bash of the orchestrator's waits for the person under an
// asking policy: yes runs it (its result goes back to the call), "yes
// but only 30 seconds" runs it with that timeout, no runs nothing and
// says the person declined; a short call runs at once.
func TestLongProcessIsAProposalFirst(t *testing.T) {
	h := confirming(t, "always", nil)
	bash := &bashTool{}
	g := h.m.ConfirmProcesses(bash, time.Minute, time.Minute)

	res := <-callAsync(g, `{"command":"ls"}`)
	if res.Output != "done" || len(bash.runs()) != 1 {
		t.Fatalf("a short call: %+v, %d runs; want it run at once", res, len(bash.runs()))
	}

	for _, tc := range []struct {
		answer, wantOut string
		wantRun         string
	}{
		{"yes", "done", `{"command":"sleep 120"}`},
		{"yes but only 30 seconds", "done", `"timeout_seconds":30`},
		{"no", "declined", ""},
	} {
		before := len(bash.runs())
		got := callAsync(g, `{"command":"sleep 120"}`)
		p := pendingProcess(t, h)
		if p.Kind != subagent.KindProcess || p.Role != "run_bash" || p.Task != "sleep 120" || !strings.Contains(p.Text, "sleeps 2 min") {
			t.Fatalf("proposal %+v", p)
		}
		select {
		case r := <-got:
			t.Fatalf("the call returned before the answer: %+v", r)
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := h.m.Answer(context.Background(), p.ID, tc.answer); err != nil {
			t.Fatalf("%q: %v", tc.answer, err)
		}
		r := <-got
		if !strings.Contains(r.Output, tc.wantOut) {
			t.Fatalf("%q: result %+v", tc.answer, r)
		}
		runs := bash.runs()
		if tc.wantRun == "" {
			if len(runs) != before {
				t.Fatalf("%q: it ran", tc.answer)
			}
			continue
		}
		if len(runs) != before+1 || !strings.Contains(string(runs[before]), tc.wantRun) {
			t.Fatalf("%q: ran %s, want %s", tc.answer, runs[before:], tc.wantRun)
		}
	}
	// The stream told the person, with the proposal's kind.
	evs, err := h.hub.Subscribe(parent.SessionKey, 0).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for _, ev := range evs {
		var c event.SpawnProposedContent
		if ev.Type == event.SpawnProposed && json.Unmarshal(ev.Content, &c) == nil && c.Kind == subagent.KindProcess {
			kinds++
		}
	}
	if kinds != 3 {
		t.Fatalf("%d SpawnProposed events of kind process, want 3", kinds)
	}
}

// A turn that ends while its call waits withdraws the proposal: a later
// yes runs nothing.
func TestProcessProposalWithdrawnWithItsTurn(t *testing.T) {
	h := confirming(t, "always", nil)
	bash := &bashTool{}
	g := h.m.ConfirmProcesses(bash, time.Minute, time.Minute)
	ctx, cancel := context.WithCancel(tool.WithCaller(context.Background(), parent))
	got := make(chan tool.Result, 1)
	go func() {
		res, _ := g.Run(ctx, json.RawMessage(`{"command":"make all"}`))
		got <- res
	}()
	p := pendingProcess(t, h)
	cancel()
	if r := <-got; !r.IsError || !strings.Contains(r.Output, "nothing was run") {
		t.Fatalf("result %+v", r)
	}
	if _, err := h.m.Answer(context.Background(), p.ID, "yes"); err == nil || len(bash.runs()) != 0 {
		t.Fatalf("a yes after the turn ended: %v, %d runs", err, len(bash.runs()))
	}
	if sp, err := h.store.GetPending(context.Background(), p.ID); err != nil || sp.Status != store.SpawnRejected {
		t.Fatalf("stored %s (%v), want rejected", sp.Status, err)
	}
}

// Under never, and for a subagent's call, nothing asks.
func TestProcessesAskOnlyTheOrchestratorUnderAnAskingPolicy(t *testing.T) {
	h := confirming(t, "never", nil)
	bash := &bashTool{}
	if g := h.m.ConfirmProcesses(bash, time.Minute, time.Minute); g != tool.Tool(bash) {
		t.Fatal("never: the tool should be left as it is")
	}
	h2 := confirming(t, "always", nil)
	g := h2.m.ConfirmProcesses(bash, time.Minute, time.Minute)
	sub := tool.Caller{AgentID: "S-abcdef", SessionKey: "ava:subagent:S-abcdef", Subagent: true}
	if res, err := g.Run(tool.WithCaller(context.Background(), sub), json.RawMessage(`{"command":"sleep 300"}`)); err != nil || res.Output != "done" {
		t.Fatalf("a subagent's call: %+v %v", res, err)
	}
}

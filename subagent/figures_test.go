package subagent_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/subagent"
)

// TestFiguresAgreeAcrossTurns: after a follow-up that is steered while it
// runs, a subagent's figures are the run's over all its turns, and they
// are the same read live (Handle.Status), from its record (what the
// store says), in the list (Manager.Runs), in its result, and in its
// parent session's spend. Its active time leaves out the idle time
// between its turns, which its wall time spans.
func TestFiguresAgreeAcrossTurns(t *testing.T) {
	h := newHarness(t, `
turns:
  - text: "first answer"
    delay: 200ms
    usage: {input: 100, output: 10}
  - tool_calls: [{name: read_file, args: {path: a}}]
    delay: 300ms
    usage: {input: 200, output: 20}
  - text: "second answer, with the hint"
    delay: 100ms
    usage: {input: 300, output: 30}
`, nil)
	ctx := context.Background()
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "look"})
	first := wait(t, hd)
	if first.Status != lifecycle.Success || first.TokensUsed != 110 || first.Iterations != 1 {
		t.Fatalf("first turn: %+v", first)
	}
	const idle = 600 * time.Millisecond
	time.Sleep(idle)
	if _, err := h.m.Send(ctx, hd.ID(), "one more thing", false); err != nil {
		t.Fatal(err)
	}
	h.model.waitCall(t) // the first turn's call
	h.model.waitCall(t) // the follow-up's first call
	if _, err := h.m.Steer(ctx, hd.ID(), "a hint"); err != nil {
		t.Fatal(err)
	}
	res := wait(t, hd)
	if res.Status != lifecycle.Success {
		t.Fatalf("follow-up: %s (%s)", res.Status, res.Error)
	}

	live := hd.Status()
	run, err := h.store.GetRun(ctx, hd.ID())
	must(t, err)
	stored := subagent.StoredStatus(run, time.Now())
	list, err := h.m.Runs(ctx, subagent.RunFilter{Session: parent.SessionKey})
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("%d runs listed, want 1", len(list))
	}
	one, err := h.m.Run(ctx, hd.ID())
	must(t, err)
	spend, err := h.store.SessionSpend(ctx, parent.SessionKey)
	must(t, err)

	const tokens, cost, iterations = 660, 6.6, 3 // 0.01¢ a token, three model calls
	views := map[string]subagent.RunStatus{"Handle.Status": live, "stored record": stored, "Runs": list[0], "Run": one}
	for name, st := range views {
		if st.Tokens != tokens || math.Abs(st.CostCents-cost) > 1e-9 || st.Iteration != iterations {
			t.Errorf("%s: %d tokens, %v¢, %d iterations; want %d, %v, %d over both turns", name, st.Tokens, st.CostCents,
				st.Iteration, tokens, cost, iterations)
		}
		if d := st.Elapsed - live.Elapsed; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%s: active %s, Handle.Status %s", name, st.Elapsed, live.Elapsed)
		}
		if st.Wall-st.Elapsed < idle-50*time.Millisecond {
			t.Errorf("%s: active %s, wall %s: the %s between the turns is not active time", name, st.Elapsed, st.Wall, idle)
		}
		if st.Elapsed < 550*time.Millisecond { // the scripted delays: 200ms, then 300ms and 100ms
			t.Errorf("%s: active %s, want at least the turns' 600ms of work", name, st.Elapsed)
		}
		if !st.StartedAt.Equal(live.StartedAt) || st.EndedAt.Sub(live.EndedAt).Abs() > time.Millisecond {
			t.Errorf("%s: started %v ended %v; Handle.Status %v, %v", name, st.StartedAt, st.EndedAt, live.StartedAt, live.EndedAt)
		}
	}
	if run.Tokens != tokens || run.Iterations != iterations || run.Active != live.Elapsed.Truncate(time.Millisecond) {
		t.Errorf("record: %d tokens, %d iterations, active %s; want %d, %d, %s", run.Tokens, run.Iterations, run.Active,
			tokens, iterations, live.Elapsed)
	}
	if res.TokensUsed != tokens || res.Iterations != iterations || math.Abs(res.DurationSeconds-live.Elapsed.Seconds()) > 0.001 {
		t.Errorf("result: %d tokens, %d iterations, %.3fs; want the run's %d, %d, %s", res.TokensUsed, res.Iterations,
			res.DurationSeconds, tokens, iterations, live.Elapsed)
	}
	if spend.Subagents.Tokens != tokens || math.Abs(spend.Subagents.CostCents-cost) > 1e-9 {
		t.Errorf("session spend on subagents %+v, want the run's %d tokens, %v¢", spend.Subagents, tokens, cost)
	}
	if len(spend.ByModel) != 1 || spend.ByModel[0] != (event.ModelSpend{Model: run.Model, Usage: spend.Subagents}) {
		t.Errorf("session spend by model %+v", spend.ByModel)
	}
}

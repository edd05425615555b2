package subagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// A background result that finishes while the turn that spawned it runs
// is stored after that turn's messages: after the request that started
// it, the spawn call and the answer, never before the request.
func TestResultFinishedDuringTurnComesAfterItsRequest(t *testing.T) {
	script := `
conversations:
  - match: "specialized researcher"
    turns: [{text: "the answer is 42"}]
  - turns:
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: "find the answer", background: true}}]
      - text: "started it"
        delay: 800ms
      - text: "it said 42"
`
	h := newHarness(t, script, nil)
	reg, err := tool.NewRegistry(h.m.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	model, err := h.opts.Catalog.Resolve("sonnet")
	if err != nil {
		t.Fatal(err)
	}
	svc := session.New(session.Config{Hub: h.hub, Subagents: h.m,
		Orchestrator: func(string, session.Limits) (*orchestrator.Orchestrator, llm.Model, error) {
			return orchestrator.New(orchestrator.Config{Model: model, Tools: reg, Hub: h.hub, Sessions: h.store,
				History: orchestrator.StoreHistory{Store: h.store}}), model, nil
		}})
	t.Cleanup(func() { svc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const key = "ava:cli:order"
	turn, err := svc.Send(ctx, key, "please research", session.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	ended := time.Now()
	if err != nil || res.Status != lifecycle.Success || res.Text != "started it" {
		t.Fatalf("turn %+v %v", res, err)
	}
	runs, err := h.m.Runs(ctx, subagent.RunFilter{Session: key})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d subagents (%v)", len(runs), err)
	}
	run, err := h.store.GetRun(ctx, runs[0].ID)
	if err != nil || run.EndedAt == nil || !run.EndedAt.Before(ended) {
		t.Fatalf("the subagent did not finish during the turn: %+v %v", run, err)
	}
	msgs, err := h.store.Messages(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range msgs {
		order = append(order, m.Role+": "+firstWords(m.Text))
	}
	if len(msgs) != 5 || msgs[0].Text != "please research" || msgs[3].Text != "started it" || msgs[4].Role != store.RoleSubagent {
		t.Fatalf("history order %q: want the request, the spawn exchange, the answer, then the result", order)
	}
	// The next prompt has the result once, after the turn that spawned it.
	next, err := svc.Send(ctx, key, "what did it find?", session.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := next.Wait(ctx); err != nil || r.Text != "it said 42" {
		t.Fatalf("next turn %+v %v", r, err)
	}
	if n := countInLastPrompt(h.model, "the answer is 42"); n != 1 {
		t.Fatalf("the result appears %d times in the next prompt", n)
	}
}

func firstWords(s string) string {
	if f := strings.Fields(s); len(f) > 4 {
		return strings.Join(f[:4], " ")
	}
	return s
}

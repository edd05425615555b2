package gateway_test

import (
	"math"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// figuresScript: a main session, and a subagent that answers its task
// and a follow-up, each turn with its own usage.
const figuresScript = `conversations:
  - match: "FIGURES"
    turns:
      - text: "first answer"
        delay: 200ms
        usage: {input: 100, output: 10}
      - text: "second answer"
        delay: 200ms
        usage: {input: 200, output: 20}
  - turns:
      - text: "hello back"
`

// TestSubagentFiguresAgree: after a follow-up, GET /api/subagents and
// GET /api/subagents/{id} show the same figures as the model layer's
// read model (subagent.Manager.Run), over both turns: tokens, cost,
// iterations, active time (without the idle time between the turns,
// which the wall time spans), and the parent session's spend agrees.
func TestSubagentFiguresAgree(t *testing.T) {
	e := newEnv(t, envOptions{script: figuresScript})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	parent := res.Session
	sa, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "researcher", Task: "FIGURES", Model: spawnModel, Parent: parent})
	must(t, err)
	waitStatus(t, e, sa.ID, "success")
	const idle = 500 * time.Millisecond
	time.Sleep(idle)
	if _, _, r := e.chat(client.ChatRequest{SessionKey: sa.SessionKey, Message: "one more thing"}); r.Status != "success" {
		t.Fatalf("follow-up %+v", r)
	}
	waitStatus(t, e, sa.ID, "success")

	one, err := e.c.Subagent(ctx(t), sa.ID)
	must(t, err)
	list, err := e.c.Subagents(ctx(t), client.SubagentFilter{Parent: parent})
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("%d subagents listed, want 1", len(list))
	}
	core, err := e.in.Subagent.Run(ctx(t), sa.ID)
	must(t, err)
	sess, err := e.c.Session(ctx(t), parent)
	must(t, err)

	const tokens, iterations = 330, 2 // the scripted usage of the two turns
	for name, got := range map[string]client.Subagent{"GET /api/subagents/{id}": one, "GET /api/subagents": list[0]} {
		if got.Tokens != core.Tokens || got.CostCents != core.CostCents || got.Iteration != core.Iteration || got.Iteration != iterations {
			t.Errorf("%s: %d tokens, %v¢, %d iterations; the read model %d, %v, %d", name, got.Tokens, got.CostCents, got.Iteration,
				core.Tokens, core.CostCents, core.Iteration)
		}
		if got.ElapsedMs != core.Elapsed.Milliseconds() || got.WallMs != core.Wall.Milliseconds() {
			t.Errorf("%s: active %dms, wall %dms; the read model %s, %s", name, got.ElapsedMs, got.WallMs, core.Elapsed, core.Wall)
		}
		if got.WallMs-got.ElapsedMs < (idle - 50*time.Millisecond).Milliseconds() {
			t.Errorf("%s: active %dms, wall %dms: the idle %s between turns counts as active", name, got.ElapsedMs, got.WallMs, idle)
		}
	}
	if core.Tokens != tokens {
		t.Errorf("read model: %d tokens, want %d over both turns", core.Tokens, tokens)
	}
	if sess.Spend.Subagents.Tokens != core.Tokens || math.Abs(sess.Spend.Subagents.CostCents-core.CostCents) > 1e-9 {
		t.Errorf("session spend on subagents %+v, the subagent's %d tokens, %v¢", sess.Spend.Subagents, core.Tokens, core.CostCents)
	}
}

// waitStatus polls GET /api/subagents/{id} until its status is want.
func waitStatus(t *testing.T, e *env, id, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sa, err := e.c.Subagent(ctx(t), id)
		must(t, err)
		if sa.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("subagent %s is %s, want %s", id, sa.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

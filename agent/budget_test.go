package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
)

// haiku is a realistic price: 1¢ per 10k input tokens, 5¢ per 10k output.
var haiku = llm.Price{Input: 100, Output: 500, CacheRead: 10, CacheWrite: 125}

// honest is a model that counts input as the request's bytes/4 and
// honours the output limit: it wants to write want output tokens and is
// cut at req.MaxTokens. It records every request.
type honest struct {
	want int
	mu   sync.Mutex
	reqs []llm.Request
}

func (h *honest) Name() string { return "honest" }
func (h *honest) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	h.mu.Lock()
	h.reqs = append(h.reqs, *req)
	h.mu.Unlock()
	in := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			in += len(b.Text) + len(b.Content) + len(b.Input)
		}
	}
	out, stop := h.want, llm.StopEndTurn
	if req.MaxTokens > 0 && out > req.MaxTokens {
		out, stop = req.MaxTokens, llm.StopMaxTokens
	}
	return &llm.Response{Usage: llm.Usage{InputTokens: in / 4, OutputTokens: out}, StopReason: stop,
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(strings.Repeat("w", out))}}}, nil
}

func (h *honest) requests() []llm.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]llm.Request(nil), h.reqs...)
}

// A final answer used to be made with no output limit and kept as success
// however much it cost: 20k output tokens of haiku are 10¢ on a 3¢ cap.
func TestCostCapBoundsTheAnswersOutput(t *testing.T) {
	m := &honest{want: 20_000}
	res := run(t, agent.Config{Model: llm.Model{Provider: m, ID: "m", Price: haiku, Priced: true}, Limits: agent.Limits{MaxCostCents: 3}}, context.Background())
	if res.Status != lifecycle.CostExceeded || !errors.Is(res.Err, agent.ErrCostExceeded) {
		t.Fatalf("status %s (%v), want cost_exceeded: the answer was cut by the cap", res.Status, res.Err)
	}
	if res.CostCents > 3 || res.CostCents < 2.9 {
		t.Fatalf("cost %.4f¢ on a 3¢ cap: the output limit must use what is left, no more", res.CostCents)
	}
	if res.Text == "" {
		t.Fatal("the cut answer's text must be kept")
	}
	if got := m.requests()[0].MaxTokens; got >= 6000 || got < 5900 {
		t.Fatalf("output limit %d, want what 3¢ buys at 5¢ per 10k after the input", got)
	}
}

// A call whose input alone does not fit in what is left is not made.
func TestCallThatCannotFitIsNotMade(t *testing.T) {
	m := &honest{want: 10}
	history := []llm.Message{llm.UserText(strings.Repeat("x", 400_000)), {Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("ok")}}}
	a := agent.New(agent.Config{Model: llm.Model{Provider: m, ID: "m", Price: haiku, Priced: true}, Limits: agent.Limits{MaxCostCents: 5}})
	res := a.Run(context.Background(), history, llm.UserText("go"))
	if res.Status != lifecycle.CostExceeded || len(m.requests()) != 0 || res.CostCents != 0 || res.Iterations != 0 {
		t.Fatalf("status %s (%v), %d calls, %d iterations, %.4f¢: 100k input tokens (10¢) must not be sent on a 5¢ cap", res.Status, res.Err, len(m.requests()), res.Iterations, res.CostCents)
	}
	if !strings.Contains(res.Err.Error(), "input tokens") {
		t.Fatalf("error %q should say what the call needed", res.Err)
	}
}

// A run whose recorded cost ends above its cap is never success, even
// when the provider counted more than the estimate: the text is kept.
func TestFinalAnswerAboveTheCapIsNotSuccess(t *testing.T) {
	liar := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return &llm.Response{Usage: llm.Usage{InputTokens: 40_000, OutputTokens: 10}, StopReason: llm.StopEndTurn,
			Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("answer")}}}, nil
	})
	res := run(t, agent.Config{Model: llm.Model{Provider: liar, ID: "m", Price: haiku, Priced: true}, Limits: agent.Limits{MaxCostCents: 3}}, context.Background())
	if res.Status != lifecycle.CostExceeded || res.Text != "answer" || res.CostCents <= 3 {
		t.Fatalf("status %s text %q cost %.4f¢ (%v)", res.Status, res.Text, res.CostCents, res.Err)
	}
}

// An unpriced model is not bounded by cost: its calls cost nothing known.
func TestUnpricedModelIsNotBoundedByCost(t *testing.T) {
	m := &honest{want: 20_000}
	res := run(t, agent.Config{Model: llm.Model{Provider: m, ID: "m"}, Limits: agent.Limits{MaxCostCents: 0.01}}, context.Background())
	if res.Status != lifecycle.Success || m.requests()[0].MaxTokens != 0 {
		t.Fatalf("status %s, output limit %d: want success with the provider's default", res.Status, m.requests()[0].MaxTokens)
	}
}

// Under a cost cap the request always names its output limit, since some
// providers (OpenAI's) have no default one.
func TestCostBoundedCallsNameTheirOutputLimit(t *testing.T) {
	m := &honest{want: 10}
	run(t, agent.Config{Model: llm.Model{Provider: m, ID: "m", Price: haiku, Priced: true}, Limits: agent.Limits{MaxCostCents: 100}}, context.Background())
	if got := m.requests()[0].MaxTokens; got != 8192 {
		t.Fatalf("output limit %d, want the default 8192 named", got)
	}
}

// When the bound leaves no room for the thinking budget, the call is made
// without thinking (Anthropic would otherwise raise the limit by it).
func TestThinkingOffWhenTheBoundLeavesNoRoom(t *testing.T) {
	m := &honest{want: 10}
	run(t, agent.Config{Model: llm.Model{Provider: m, ID: "m", Price: haiku, Priced: true}, ThinkingBudget: 4096,
		Limits: agent.Limits{MaxCostCents: 1}}, context.Background())
	r := m.requests()[0]
	if r.MaxTokens > 2000 || r.ThinkingBudget != 0 {
		t.Fatalf("output limit %d thinking %d: 1¢ buys < 2000 output tokens, so no 4096-token thinking", r.MaxTokens, r.ThinkingBudget)
	}
}

// fakeBudget grants at most limit per call and records what it is told.
type fakeBudget struct {
	limit   float64
	err     error
	mu      sync.Mutex
	asked   [][2]float64
	settled []float64
}

func (b *fakeBudget) Reserve(ctx context.Context, want, least float64) (float64, func(float64), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, [2]float64{want, least})
	if b.err != nil {
		return 0, nil, b.err
	}
	return min(want, b.limit), func(spent float64) {
		b.mu.Lock()
		b.settled = append(b.settled, spent)
		b.mu.Unlock()
	}, nil
}

func TestSharedBudgetBoundsEachCallAndIsToldTheCost(t *testing.T) {
	m := &honest{want: 20_000}
	b := &fakeBudget{limit: 1}
	res := run(t, agent.Config{Model: llm.Model{Provider: m, ID: "m", Price: haiku, Priced: true}, Budget: b,
		Limits: agent.Limits{MaxCostCents: 50}}, context.Background())
	if res.Status != lifecycle.CostExceeded {
		t.Fatalf("status %s (%v): the answer was cut by the shared budget", res.Status, res.Err)
	}
	if len(b.asked) != 1 || len(b.settled) != 1 || b.settled[0] != res.CostCents || res.CostCents > 1 {
		t.Fatalf("asked %v settled %v cost %.4f¢", b.asked, b.settled, res.CostCents)
	}
	if want, least := b.asked[0][0], b.asked[0][1]; want <= least || least <= 0 {
		t.Fatalf("reserve want %.4f least %.4f", want, least)
	}
}

func TestSharedBudgetRefusalEndsTheRunBeforeTheCall(t *testing.T) {
	m := &honest{want: 10}
	b := &fakeBudget{}
	b.err = errors.Join(agent.ErrCostExceeded, errors.New("the group's 5¢ are spent"))
	res := run(t, agent.Config{Model: llm.Model{Provider: m, ID: "m", Price: haiku, Priced: true}, Budget: b,
		Limits: agent.Limits{MaxCostCents: 50}}, context.Background())
	if res.Status != lifecycle.CostExceeded || len(m.requests()) != 0 || !strings.Contains(res.Err.Error(), "group's 5¢") {
		t.Fatalf("status %s (%v), %d calls", res.Status, res.Err, len(m.requests()))
	}
}

// A budget that grants less than the least a call needs is a refusal: the
// call is not made and the reservation is released.
func TestSharedBudgetGrantBelowTheLeastIsARefusal(t *testing.T) {
	m := &honest{want: 10}
	b := &fakeBudget{limit: 1e-6}
	res := run(t, agent.Config{Model: llm.Model{Provider: m, ID: "m", Price: haiku, Priced: true}, Budget: b,
		Limits: agent.Limits{MaxCostCents: 50}}, context.Background())
	if res.Status != lifecycle.CostExceeded || len(m.requests()) != 0 || len(b.settled) != 1 || b.settled[0] != 0 {
		t.Fatalf("status %s (%v), %d calls, settled %v", res.Status, res.Err, len(m.requests()), b.settled)
	}
}

// fixedUsage is a model that answers with usage whatever it was allowed:
// the provider counted more than the loop estimated.
func fixedUsage(in, out int) llm.Provider {
	return providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return &llm.Response{Usage: llm.Usage{InputTokens: in, OutputTokens: out}, StopReason: llm.StopEndTurn,
			Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("answer")}}}, nil
	})
}

// The cost cap holds to the last token (issue 40 item 2): a final answer
// that brings the run to its cap exactly is success; one output token
// more (0.0005¢ of haiku) ends cost_exceeded with the answer kept.
func TestFinalAnswerAtTheCostCapBoundary(t *testing.T) {
	for _, tc := range []struct {
		out  int
		want lifecycle.Status
	}{{200, lifecycle.Success}, {201, lifecycle.CostExceeded}} {
		// 29,000 input tokens are 2.9¢, 200 output tokens 0.1¢.
		res := run(t, agent.Config{Model: llm.Model{Provider: fixedUsage(29_000, tc.out), ID: "m", Price: haiku, Priced: true},
			Limits: agent.Limits{MaxCostCents: 3}}, context.Background())
		if res.Status != tc.want || res.Text != "answer" {
			t.Fatalf("29000+%d tokens (%.4f¢) on a 3¢ cap: status %s text %q (%v), want %s with the text", tc.out, res.CostCents, res.Status, res.Text, res.Err, tc.want)
		}
	}
}

// A shared budget holds to the last token the same way: an answer that
// costs what the budget granted exactly is success, one output token
// more is cost_exceeded, its text kept.
func TestFinalAnswerAtTheSharedBudgetBoundary(t *testing.T) {
	for _, tc := range []struct {
		out  int
		want lifecycle.Status
	}{{200, lifecycle.Success}, {201, lifecycle.CostExceeded}} {
		b := &fakeBudget{limit: 1} // 9,000 input tokens are 0.9¢, 200 output 0.1¢
		res := run(t, agent.Config{Model: llm.Model{Provider: fixedUsage(9_000, tc.out), ID: "m", Price: haiku, Priced: true},
			Budget: b, Limits: agent.Limits{MaxCostCents: 50}}, context.Background())
		if res.Status != tc.want || res.Text != "answer" {
			t.Fatalf("9000+%d tokens (%.4f¢) on a 1¢ grant: status %s text %q (%v), want %s with the text", tc.out, res.CostCents, res.Status, res.Text, res.Err, tc.want)
		}
	}
}

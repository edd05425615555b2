package budget_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/budget"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sessions is a Source with one session whose stored figures a test sets.
type sessions struct {
	mu            sync.Mutex
	budget, spent float64
}

func (s *sessions) GetSession(ctx context.Context, key string) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key != "ava:cli:t" {
		return store.Session{}, store.ErrNotFound
	}
	return store.Session{Key: key, BudgetCents: s.budget, SpentCents: s.spent}, nil
}

func (s *sessions) store(cents float64) {
	s.mu.Lock()
	s.spent += cents
	s.mu.Unlock()
}

// haiku: 1¢ per 10k input tokens, 5¢ per 10k output.
var haiku = llm.Price{Input: 100, Output: 500}

// answers is a model that answers with the given usage.
type answers struct{ in, out int }

func (a answers) Name() string { return "fixed" }
func (a answers) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	return &llm.Response{Usage: llm.Usage{InputTokens: a.in, OutputTokens: a.out}, StopReason: llm.StopEndTurn,
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("answer")}}}, nil
}

// runOn runs one agent turn whose calls reserve from share.
func runOn(share agent.Budget, in, out int) agent.Result {
	a := agent.New(agent.Config{Model: llm.Model{Provider: answers{in, out}, ID: "m", Price: haiku, Priced: true},
		Budget: share, Limits: agent.Limits{MaxCostCents: 50}})
	return a.Run(context.Background(), nil, llm.UserText("go"))
}

// The session's budget is one budget: what one participant (the
// orchestrator's turn) spent live counts against another (a subagent)
// before either is stored. At the boundary: the second's answer that
// brings the session to its budget exactly is success, one output token
// more is cost_exceeded; either way, a third call is then refused.
func TestSessionBudgetIsOneBudgetAtTheBoundary(t *testing.T) {
	for _, tc := range []struct {
		out  int
		want lifecycle.Status
	}{{200, lifecycle.Success}, {201, lifecycle.CostExceeded}} {
		src := &sessions{budget: 3, spent: 1} // 1¢ of ended turns stored
		l := budget.NewLedger(src)
		turn := l.Join("ava:cli:t")
		// The turn spends 1¢ live: 10,000 input tokens.
		if res := runOn(turn, 10_000, 0); res.Status != lifecycle.Success {
			t.Fatalf("turn: %s (%v)", res.Status, res.Err)
		}
		st, err := l.Standing(context.Background(), "ava:cli:t")
		if err != nil || st.Left() != 1 || st.Live != 1 {
			t.Fatalf("standing %+v (%v): want 1¢ live and 1¢ left", st, err)
		}
		sub := l.Join("ava:cli:t")
		// 9,000 input tokens (0.9¢) and 200 output (0.1¢): the last 1¢.
		res := runOn(sub, 9_000, tc.out)
		if res.Status != tc.want || res.Text != "answer" {
			t.Fatalf("subagent 9000+%d tokens (%.4f¢) with 1¢ left: %s text %q (%v), want %s", tc.out, res.CostCents, res.Status, res.Text, res.Err, tc.want)
		}
		// The orchestrator's next call is refused before it is made.
		if res := runOn(turn, 1, 1); res.Status != lifecycle.CostExceeded || res.Iterations != 0 || !errors.Is(res.Err, agent.ErrCostExceeded) {
			t.Fatalf("the turn's next call after the session's budget is spent: %s, %d calls (%v)", res.Status, res.Iterations, res.Err)
		}
		turn.Leave()
		sub.Leave()
	}
}

// A participant that leaves once its spend is stored is counted once:
// the store's figure replaces its live one.
func TestLeaveAfterStoreCountsOnce(t *testing.T) {
	src := &sessions{budget: 5}
	l := budget.NewLedger(src)
	sh := l.Join("ava:cli:t")
	runOn(sh, 20_000, 0) // 2¢
	src.store(sh.Spent())
	st, _ := l.Standing(context.Background(), "ava:cli:t")
	if st.Spent() != 4 { // counted twice for a moment: on the safe side
		t.Fatalf("before leaving: spent %.4f¢, want 4 (stored and live)", st.Spent())
	}
	sh.Leave()
	st, _ = l.Standing(context.Background(), "ava:cli:t")
	if st.Spent() != 2 || st.Left() != 3 {
		t.Fatalf("after leaving: %+v, want 2¢ spent, 3¢ left", st)
	}
}

// A call that wants more than is left waits while another call holds a
// reservation, and gets what that one gave back.
func TestReserveWaitsForAnotherCall(t *testing.T) {
	l := budget.NewLedger(&sessions{budget: 1})
	a, b := l.Join("ava:cli:t"), l.Join("ava:cli:t")
	defer a.Leave()
	defer b.Leave()
	ga, settle, err := a.Reserve(context.Background(), 0.8, 0.1)
	if err != nil || ga != 0.8 {
		t.Fatalf("first reservation %.2f (%v)", ga, err)
	}
	got := make(chan float64)
	go func() {
		g, s, err := b.Reserve(context.Background(), 0.5, 0.1)
		if err != nil {
			got <- -1
			return
		}
		s(0)
		got <- g
	}()
	select {
	case g := <-got:
		t.Fatalf("granted %.2f while 0.8 of 1 was held", g)
	case <-time.After(50 * time.Millisecond):
	}
	settle(0.6)
	if g := <-got; g < 0.4-1e-9 || g > 0.4+1e-9 {
		t.Fatalf("granted %.4f after the first spent 0.6 of 1, want 0.4", g)
	}
}

// A session with no budget (or unknown to the store) grants every call.
func TestNoBudgetGrantsAll(t *testing.T) {
	l := budget.NewLedger(&sessions{})
	for _, key := range []string{"ava:cli:t", "ava:cli:other"} {
		sh := l.Join(key)
		g, settle, err := sh.Reserve(context.Background(), 7, 1)
		if err != nil || g != 7 {
			t.Fatalf("%s: granted %.2f (%v)", key, g, err)
		}
		settle(7)
		sh.Leave()
		if st, _ := l.Standing(context.Background(), key); st.Limited {
			t.Fatalf("%s: %+v", key, st)
		}
	}
}

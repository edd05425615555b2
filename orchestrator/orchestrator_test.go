package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/budget"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

// fakeModel is an llm.Provider that records every request and answers
// with answer (default: "answer N" for the Nth call, 100 input and 10
// output tokens).
type fakeModel struct {
	mu     sync.Mutex
	reqs   []*llm.Request
	answer func(ctx context.Context, n int, req *llm.Request) (*llm.Response, error)
}

func (f *fakeModel) Name() string { return "fake" }

func (f *fakeModel) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	n := len(f.reqs)
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.answer != nil {
		return f.answer(ctx, n, req)
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("answer " + string(rune('0'+n)))}},
		Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}, StopReason: llm.StopEndTurn, Model: "m"}, nil
}

func (f *fakeModel) requests() []*llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*llm.Request(nil), f.reqs...)
}

// turnHarness is an orchestrator on real SQLite with the store's history
// and budgets, and a fixed clock.
type turnHarness struct {
	o     *orchestrator.Orchestrator
	store *sqlite.Store
	hub   *event.Hub
	model *fakeModel
}

var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTurnHarness(t *testing.T, offline bool, adjust func(*orchestrator.Config)) *turnHarness {
	t.Helper()
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/ava.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fm := &fakeModel{}
	// 0.01¢ a token: a call of 100 input and 10 output tokens costs 1.1¢.
	model := llm.Model{Provider: fm, ID: "m", Price: llm.Price{Input: 10_000, Output: 10_000}, Priced: true}
	hub := event.NewHub(st)
	cfg := orchestrator.Config{Model: model, Hub: hub, History: orchestrator.StoreHistory{Store: st}, Sessions: st,
		Offline: offline, Logger: slog.New(slog.DiscardHandler), Clock: func() time.Time { return clock }}
	if adjust != nil {
		adjust(&cfg)
	}
	return &turnHarness{o: orchestrator.New(cfg), store: st, hub: hub, model: fm}
}

// events returns the session's stored events, checking that their
// numbers run 1..N.
func (h *turnHarness) events(t *testing.T, session string) []event.Event {
	t.Helper()
	evs, err := event.NewHub(h.store).Subscribe(session, 0).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d (%s) has seq %d", i, ev.Type, ev.Seq)
		}
	}
	return evs
}

func sessionContent(t *testing.T, ev event.Event) event.SessionContent {
	t.Helper()
	var c event.SessionContent
	if err := json.Unmarshal(ev.Content, &c); err != nil {
		t.Fatalf("%s content %s: %v", ev.Type, ev.Content, err)
	}
	return c
}

// A turn stores the user's message and the answer, and its events open
// with SessionStart and close with SessionEnd carrying the status, the
// model, the offline flag and the turn's usage.
func TestTurnStoresMessagesAndFramesEvents(t *testing.T) {
	for _, offline := range []bool{false, true} {
		t.Run(map[bool]string{false: "online", true: "offline"}[offline], func(t *testing.T) {
			h := newTurnHarness(t, offline, nil)
			ctx := context.Background()
			res, err := h.o.Ask(ctx, "ava:test:s", "alice", "hello")
			if err != nil || res.Status != lifecycle.Success || res.Text != "answer 1" {
				t.Fatalf("turn: %+v %v", res, err)
			}
			msgs, err := h.store.Messages(ctx, "ava:test:s", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]string
			for _, m := range msgs {
				got = append(got, [2]string{m.Role, m.Text})
			}
			if diff := cmp.Diff([][2]string{{store.RoleUser, "hello"}, {store.RoleAssistant, "answer 1"}}, got); diff != "" {
				t.Fatalf("stored messages (-want +got):\n%s", diff)
			}
			evs := h.events(t, "ava:test:s")
			if len(evs) < 2 || evs[0].Type != event.SessionStart || evs[len(evs)-1].Type != event.SessionEnd {
				t.Fatalf("events %v", types(evs))
			}
			for _, ev := range evs {
				if ev.User != "alice" || ev.Session != "ava:test:s" {
					t.Fatalf("%s event addressed to %q/%q", ev.Type, ev.User, ev.Session)
				}
			}
			start, end := sessionContent(t, evs[0]), sessionContent(t, evs[len(evs)-1])
			if start.Model != "fake/m" || start.Offline != offline || evs[0].Agent != event.OrchestratorID || !evs[0].Time.Equal(clock) {
				t.Fatalf("SessionStart %+v agent %s time %s", start, evs[0].Agent, evs[0].Time)
			}
			if end.Status != lifecycle.Success || end.Offline != offline || end.Model != "fake/m" {
				t.Fatalf("SessionEnd %+v", end)
			}
			if m := evs[len(evs)-1].Meta; m.InputTokens != 100 || m.OutputTokens != 10 || m.ModelID != "fake/m" || m.CostCents != res.CostCents {
				t.Fatalf("SessionEnd meta %+v, result cost %.4f", m, res.CostCents)
			}
			if j := orchestrator.JSON(res, "ava:test:s", llm.Model{Provider: h.model, ID: "m"}, offline); j.Offline != offline || j.Status != lifecycle.Success {
				t.Fatalf("JSON %+v", j)
			}
		})
	}
}

func types(evs []event.Event) []event.Type {
	var out []event.Type
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// SessionEnd carries how the turn ended, also when it did not succeed.
func TestSessionEndCarriesStatus(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cases := []struct {
		name   string
		ctx    context.Context
		answer func(context.Context, int, *llm.Request) (*llm.Response, error)
		want   lifecycle.Status
	}{
		{"model error", context.Background(), func(context.Context, int, *llm.Request) (*llm.Response, error) {
			return nil, &llm.APIError{Provider: "fake", StatusCode: 400, Message: "bad request"}
		}, lifecycle.Error},
		// Stopped while the model is answering.
		{"cancelled", ctx, func(ctx context.Context, _ int, _ *llm.Request) (*llm.Response, error) {
			cancel(agent.ErrCancelled)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, lifecycle.Cancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newTurnHarness(t, false, nil)
			h.model.answer = c.answer
			res, err := h.o.Ask(c.ctx, "ava:test:s", "", "hello")
			if err != nil || res.Status != c.want {
				t.Fatalf("turn: status %s (%v), error %v; want %s", res.Status, res.Err, err, c.want)
			}
			evs := h.events(t, "ava:test:s")
			if end := evs[len(evs)-1]; end.Type != event.SessionEnd || sessionContent(t, end).Status != c.want {
				t.Fatalf("last event %s %s, want SessionEnd %s", end.Type, end.Content, c.want)
			}
		})
	}
}

// The next turn's prompt holds the earlier turns and a [Subagent] result
// announced into the session between them, once; the turn after holds it
// once too (it is history, not delivered again).
func TestHistoryCarriesPriorTurnsAndSubagentResultsOnce(t *testing.T) {
	h := newTurnHarness(t, false, nil)
	ctx := context.Background()
	const session = "ava:test:s"
	if _, err := h.o.Ask(ctx, session, "", "first question"); err != nil {
		t.Fatal(err)
	}
	const result = "[Task: count competitors]\nSubagent S-00aa01 finished: status=success"
	announce(t, h.store, session, result)
	if _, err := h.o.Ask(ctx, session, "", "second question"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.o.Ask(ctx, session, "", "third question"); err != nil {
		t.Fatal(err)
	}
	reqs := h.model.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	want := [][]string{
		{"first question"},
		{"first question", "answer 1", "[Subagent] " + result, "second question"},
		{"first question", "answer 1", "[Subagent] " + result, "second question", "answer 2", "third question"},
	}
	for i, req := range reqs {
		if diff := cmp.Diff(want[i], texts(req.Messages)); diff != "" {
			t.Errorf("turn %d prompt (-want +got):\n%s", i+1, diff)
		}
		if n := strings.Count(joined(req.Messages), "S-00aa01"); i > 0 && n != 1 {
			t.Errorf("turn %d prompt holds the subagent result %d times", i+1, n)
		}
	}
}

// announce records a finished background run of the session and
// announces its result, as the subagent manager does.
func announce(t *testing.T, st *sqlite.Store, session, text string) {
	t.Helper()
	ctx := context.Background()
	run := store.Run{ID: "00000000-0000-4000-8000-000000000001", ShortID: "S-00aa01", SessionKey: "ava:subagent:S-00aa01",
		ParentSession: session, ParentAgent: event.OrchestratorID, Mode: store.ModeSingle, Role: "researcher", Task: "count competitors",
		Model: "fake/m", Config: json.RawMessage(`{}`), Status: lifecycle.Running, StartedAt: &clock}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := st.TransitionRun(ctx, run.ID, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, &store.RunFinish{Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	blocks, _ := json.Marshal(llm.UserText("[Subagent] " + text))
	msg := store.Message{SessionKey: session, Role: store.RoleSubagent, Sender: store.SenderSubagent, Text: text, Blocks: blocks, RunID: run.ID}
	for i, want := range []bool{true, false} {
		if ok, err := st.AnnounceResult(ctx, run.ID, "", msg); err != nil || ok != want {
			t.Fatalf("announce %d: %v %v, want %v", i+1, ok, err, want)
		}
	}
}

// texts is each message's text, tool exchanges aside, one entry per text
// block (a [Subagent] message merged into a user turn stays visible).
func texts(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == llm.BlockText {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

func joined(msgs []llm.Message) string { return strings.Join(texts(msgs), "\n") }

// A session's budget caps the turn's cost, the turn's cost is added to
// the session's spend, and a spent budget refuses the next turn before
// any model call or event.
func TestSessionBudget(t *testing.T) {
	h := newTurnHarness(t, false, func(c *orchestrator.Config) { c.Limits = agent.Limits{MaxCostCents: 100} })
	ctx := context.Background()
	const session = "ava:test:s"
	if err := h.store.SetSessionBudget(ctx, session, 3); err != nil {
		t.Fatal(err)
	}
	res, err := h.o.Ask(ctx, session, "", "one")
	if err != nil || res.Status != lifecycle.Success || res.CostCents <= 0 {
		t.Fatalf("first turn %+v %v", res, err)
	}
	s, err := h.store.GetSession(ctx, session)
	if err != nil || s.SpentCents != res.CostCents {
		t.Fatalf("session spend %.4f¢ after a turn costing %.4f¢ (%v)", s.SpentCents, res.CostCents, err)
	}
	// What is left (3¢ - 1.1¢) is below the cost of the next call: the
	// turn's cap is the budget's rest, not the configured 100¢.
	h.model.answer = func(context.Context, int, *llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("expensive")}},
			Usage: llm.Usage{InputTokens: 1000, OutputTokens: 1000}, StopReason: llm.StopEndTurn}, nil
	}
	res, err = h.o.Ask(ctx, session, "", "two")
	if err != nil || res.Status != lifecycle.CostExceeded {
		t.Fatalf("second turn: %s (%v) %v, want cost_exceeded under the session's 1.9¢ left", res.Status, res.Err, err)
	}
	if err := h.store.AddSessionSpend(ctx, session, store.Spend{Model: "m", Usage: event.Usage{CostCents: 5}}); err != nil {
		t.Fatal(err)
	}
	calls, before := len(h.model.requests()), len(h.events(t, session))
	res, err = h.o.Ask(ctx, session, "", "three")
	if !errors.Is(err, orchestrator.ErrBudgetSpent) || res.Status != lifecycle.Error {
		t.Fatalf("turn over a spent budget: %s %v", res.Status, err)
	}
	if len(h.model.requests()) != calls || len(h.events(t, session)) != before {
		t.Fatal("a refused turn called the model or published events")
	}
}

// The session's budget is one budget: a subagent's spend in this process
// that the store does not hold yet (its run still going) counts against
// the orchestrator's turn: with 3¢ of 10¢ left the turn runs (1.1¢);
// once the subagent has spent the rest live (the budget reached
// exactly), the next turn is refused before any model call.
func TestSessionBudgetCountsTheSubagentsLiveSpend(t *testing.T) {
	var ledger *budget.Ledger
	h := newTurnHarness(t, false, func(c *orchestrator.Config) {
		ledger = budget.NewLedger(c.Sessions)
		c.Ledger = ledger
	})
	ctx := context.Background()
	const session = "ava:test:live"
	if err := h.store.SetSessionBudget(ctx, session, 10); err != nil {
		t.Fatal(err)
	}
	sub := ledger.Join(session) // a subagent's run, spending live
	defer sub.Leave()
	spend := func(cents float64) {
		_, settle, err := sub.Reserve(ctx, cents, cents)
		if err != nil {
			t.Fatal(err)
		}
		settle(cents)
	}
	spend(7)
	res, err := h.o.Ask(ctx, session, "", "one")
	if err != nil || res.Status != lifecycle.Success || res.CostCents != 1.1 {
		t.Fatalf("turn with 3¢ left: %s %.4f¢ (%v) %v, want success", res.Status, res.CostCents, res.Err, err)
	}
	// The turn's 1.1¢ is stored now; the subagent spends the last 1.9¢.
	spend(1.9)
	calls := len(h.model.requests())
	res, err = h.o.Ask(ctx, session, "", "two")
	if !errors.Is(err, orchestrator.ErrBudgetSpent) || len(h.model.requests()) != calls {
		t.Fatalf("turn with the subagents' live spend filling the budget: %s (%v), %d calls", res.Status, err, len(h.model.requests())-calls)
	}
}

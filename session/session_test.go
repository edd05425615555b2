package session_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// slowScript answers every message after a delay, so turns overlap.
const slowScript = `conversations:
  - turns:
      - text: "first"
        delay: 300ms
      - text: "second"
        delay: 300ms
      - text: "third"
        delay: 300ms
`

func newService(t *testing.T) (*session.Service, *event.Hub) {
	t.Helper()
	return newMergeService(t, 0)
}

type memHistory struct{ msgs map[string][]llm.Message }

func (h *memHistory) Load(_ context.Context, s string) ([]llm.Message, error) { return h.msgs[s], nil }
func (h *memHistory) Save(_ context.Context, s string, m []llm.Message) error {
	h.msgs[s] = append(h.msgs[s], m...)
	return nil
}

func (h *memHistory) SaveKeyed(ctx context.Context, s string, m []llm.Message, _ *store.Idempotency) error {
	return h.Save(ctx, s, m)
}

func wait(t *testing.T, turn *session.Turn) session.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-turn.Done():
	case <-ctx.Done():
		t.Fatal("turn did not end")
	}
	// A cancelled turn also returns an error; its result says how it ended.
	res, _ := turn.Wait(ctx)
	return res
}

func TestOneTurnAtATimeBusyOrQueued(t *testing.T) {
	svc, hub := newService(t)
	ctx := context.Background()
	const key = "ava:test:one"
	first, err := svc.Send(ctx, key, "a", session.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := svc.State(key); st != session.Running {
		t.Fatalf("state %s while a turn runs", st)
	}
	if _, err := svc.Send(ctx, key, "b", session.SendOptions{}); !errors.Is(err, session.ErrBusy) {
		t.Fatalf("second message while busy: %v, want ErrBusy", err)
	}
	queued, err := svc.Send(ctx, key, "c", session.SendOptions{Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, first); r.Text != "first" || r.Status != lifecycle.Success {
		t.Fatalf("first turn %+v", r)
	}
	if r := wait(t, queued); r.Text != "second" || r.Status != lifecycle.Success {
		t.Fatalf("queued turn %+v", r)
	}
	waitState(t, svc, key, session.Idle)
	var states []string
	evs, _ := hub.Subscribe(key, 0).Poll(ctx)
	for _, ev := range evs {
		if ev.Type == event.SessionState {
			var c event.StateContent
			_ = ev.Decode(&c)
			states = append(states, c.State)
		}
	}
	if !slices.Equal(states, []string{"running", "running", "idle"}) {
		t.Fatalf("state events %v", states)
	}
}

func TestSupersedeCancelsTheRunningTurn(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	const key = "ava:test:two"
	first, err := svc.Send(ctx, key, "a", session.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next, err := svc.Send(ctx, key, "b", session.SendOptions{Supersede: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, first); r.Status != "cancelled" {
		t.Fatalf("superseded turn ended %s", r.Status)
	}
	if r := wait(t, next); r.Status != lifecycle.Success {
		t.Fatalf("superseding turn %+v", r)
	}
}

func TestStopCancelsTurnAndQueue(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	const key = "ava:test:three"
	first, _ := svc.Send(ctx, key, "a", session.SendOptions{})
	queued, _ := svc.Send(ctx, key, "b", session.SendOptions{Queue: true})
	if running, err := svc.Stop(key); err != nil || !running {
		t.Fatalf("stop: %v %v", running, err)
	}
	if r := wait(t, first); r.Status != "cancelled" {
		t.Fatalf("stopped turn ended %s", r.Status)
	}
	if r := wait(t, queued); r.Status != "cancelled" {
		t.Fatalf("queued turn ended %s", r.Status)
	}
}

// waitState waits for the session to reach a state: each change is
// published (SessionState) after it is recorded, so the state is looked
// at again as each event of the session arrives.
func waitState(t *testing.T, svc *session.Service, key string, want session.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub := svc.Subscribe(key, 0)
	for svc.State(key) != want {
		if _, err := sub.Next(ctx); err != nil {
			t.Fatalf("state %s, want %s: %v", svc.State(key), want, err)
		}
	}
}

// An idle session leaves memory: its journal too (its events stay in the
// log, and the next turn numbers on from there).
func TestIdleSessionLeavesMemory(t *testing.T) {
	svc, hub := newService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const key = "ava:test:idle"
	for i := range 2 {
		last, err := svc.LastSeq(key)
		if err != nil {
			t.Fatal(err)
		}
		sub := svc.Subscribe(key, last)
		if _, err := svc.Send(ctx, key, "a", session.SendOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIdleEvent(t, ctx, sub)
		svc.State(key) // the state and the journal change under one lock
		if n := hub.InMemory(); n != 0 {
			t.Fatalf("turn %d: %d journals in memory after the session went idle", i+1, n)
		}
	}
	evs, err := hub.Subscribe(key, 0).Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d numbered %d across the two turns", i+1, ev.Seq)
		}
	}
}

// waitIdleEvent reads sub until a SessionState idle event.
func waitIdleEvent(t *testing.T, ctx context.Context, sub *event.Subscription) {
	t.Helper()
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no idle state: %v", err)
		}
		for _, ev := range evs {
			var c event.StateContent
			if ev.Type == event.SessionState && ev.Decode(&c) == nil && c.State == string(session.Idle) {
				return
			}
		}
	}
}

// A person's second message within the merge window cancels the running
// turn and both are answered as one; after the window it is refused as
// busy (or queued) as before.
func TestMergeWindow(t *testing.T) {
	svc, hub := newMergeService(t, time.Minute)
	ctx := context.Background()
	const key = "ava:test:merge"
	first, err := svc.Send(ctx, key, "find flights to Lisbon", session.SendOptions{Merge: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := svc.Send(ctx, key, "in May", session.SendOptions{Merge: true})
	if err != nil {
		t.Fatalf("a message within the window: %v", err)
	}
	if r := wait(t, first); r.Status != lifecycle.Cancelled || !first.Merged() {
		t.Fatalf("the first turn: %+v, merged %v", r, first.Merged())
	}
	if r := wait(t, second); r.Status != lifecycle.Success {
		t.Fatalf("the merged turn: %+v", r)
	}
	var users []string
	evs, _ := hub.Subscribe(key, 0).Poll(ctx)
	for _, ev := range evs {
		if ev.Type == event.UserMessage {
			var c event.TextContent
			_ = ev.Decode(&c)
			users = append(users, c.Text)
		}
	}
	if len(users) != 2 || users[1] != "find flights to Lisbon\n\nin May" {
		t.Fatalf("user messages %q: the merged turn does not carry both", users)
	}
	// The history holds each message once, stored when its turn started
	// (the cut turn's before its model call), then the merged turn's
	// answer; the merged turn's prompt had them once, as one message.
	hist, _ := mergeHistory.Load(ctx, key)
	if len(hist) != 3 || hist[0].TextContent() != "find flights to Lisbon" || hist[1].TextContent() != "in May" ||
		hist[2].Role != llm.RoleAssistant {
		t.Fatalf("history %+v", hist)
	}

	// Past the window: busy, as without Merge.
	svc2, _ := newMergeService(t, time.Nanosecond)
	if _, err := svc2.Send(ctx, key, "a", session.SendOptions{Merge: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc2.Send(ctx, key, "b", session.SendOptions{Merge: true}); !errors.Is(err, session.ErrBusy) {
		t.Fatalf("after the window: %v, want ErrBusy", err)
	}
}

// newMergeService is newService with a merge window.
func newMergeService(t *testing.T, window time.Duration) (*session.Service, *event.Hub) {
	t.Helper()
	s, err := scripted.Parse("t", []byte(slowScript))
	if err != nil {
		t.Fatal(err)
	}
	cat := llm.NewCatalog(nil)
	cat.Add(scripted.NewWithScript(s), map[string]string{"sonnet": "t"})
	model, err := cat.Resolve("scripted/t")
	if err != nil {
		t.Fatal(err)
	}
	hub := event.NewHub(nil)
	history := &memHistory{msgs: map[string][]llm.Message{}}
	mergeHistory = history
	svc := session.New(session.Config{Hub: hub, MergeWindow: window,
		Orchestrator: func(string, session.Limits) (*orchestrator.Orchestrator, llm.Model, error) {
			return orchestrator.New(orchestrator.Config{Model: model, Hub: hub, History: history}), model, nil
		}})
	t.Cleanup(func() { svc.Close() })
	return svc, hub
}

// mergeHistory is the history of the last newMergeService.
var mergeHistory *memHistory

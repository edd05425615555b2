package session_test

import (
	"context"
	"sync"
	"testing"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/session"
)

// TestTurnEndedNotices: every main session turn's end reaches every
// observer, in order, with the session key and how it ended.
func TestTurnEndedNotices(t *testing.T) {
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
	set := observe.New(observe.Options{})
	var mu sync.Mutex
	got := map[int][]observe.TurnEnded{}
	for i := range 2 {
		set.Add(observe.Observer{TurnEnded: func(_ context.Context, n observe.TurnEnded) {
			mu.Lock()
			got[i] = append(got[i], n)
			mu.Unlock()
		}})
	}
	svc := session.New(session.Config{Hub: hub, Observers: set,
		Orchestrator: func(string, session.Limits) (*orchestrator.Orchestrator, llm.Model, error) {
			return orchestrator.New(orchestrator.Config{Model: model, Hub: hub, History: history}), model, nil
		}})
	const key = "ava:test:observed"
	var turns []*session.Turn
	for _, msg := range []string{"one", "two"} {
		turn, err := svc.Send(context.Background(), key, msg, session.SendOptions{Queue: true})
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, turn)
	}
	for _, turn := range turns {
		wait(t, turn)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := set.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if len(got[i]) != 2 {
			t.Fatalf("observer %d saw %d turn ends, want 2", i, len(got[i]))
		}
		for _, n := range got[i] {
			if n.Session != key || n.Status != lifecycle.Success || n.Tokens == 0 || n.RunID != "" || n.Time.IsZero() {
				t.Errorf("observer %d: TurnEnded %+v", i, n)
			}
		}
	}
}

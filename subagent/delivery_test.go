package subagent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// slowCompletion is a store that holds the parent's SubagentComplete
// event (published between the run's end record and the announcement of
// its result) until release, having said so on entered.
type slowCompletion struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (s *slowCompletion) AppendEvents(ctx context.Context, evs []event.Event) error {
	for _, ev := range evs {
		if ev.Type == event.SubagentComplete && ev.Session == parent.SessionKey {
			s.entered <- struct{}{}
			<-s.release
		}
	}
	return s.Store.AppendEvents(ctx, evs)
}

// TestParentTurnWaitsForAResultOnItsWay: a background run whose end is
// recorded (anyone may see it finished) and whose result is not yet in
// its parent's history makes the parent's next turn wait for it
// (FlushResults, what a turn calls as it starts), so that the turn's
// history has the result.
func TestParentTurnWaitsForAResultOnItsWay(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: done\n", nil)
	ctx := context.Background()
	st := &slowCompletion{Store: h.store, entered: make(chan struct{}, 1), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(st.release) }) }
	opts := h.opts
	opts.Store, opts.Hub = st, event.NewHub(st)
	m := subagent.NewManager(opts)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer release()
	hd, err := m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "t"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the run never completed")
	}
	if run, err := h.store.GetRun(ctx, hd.ID()); err != nil || run.Status != "success" {
		t.Fatalf("the run's end is not recorded yet: %+v %v", run.Status, err)
	}
	flushed := make(chan struct{})
	go func() {
		m.FlushResults(ctx, parent.SessionKey)
		close(flushed)
	}()
	select {
	case <-flushed:
		t.Fatal("the parent's turn went on before the result it may have seen finish reached its history")
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case <-flushed:
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's turn still waits after the result was announced")
	}
	run, err := h.store.GetRun(ctx, hd.ID())
	if err != nil || !run.Announced {
		t.Fatalf("announced %v, %v", run.Announced, err)
	}
}

package orchestrator_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store"
)

// owners is an orchestrator.Owner: this instance is "self", the gone
// ones are listed.
type owners struct{ gone map[string]bool }

func (owners) ID() string { return "self" }

func (o owners) Gone(_ context.Context, ids []string) ([]store.Instance, error) {
	var out []store.Instance
	for _, id := range ids {
		if o.gone[id] {
			out = append(out, store.Instance{ID: id})
		}
	}
	return out, nil
}

// leaveOpenTurn stores what a turn leaves when its process is killed
// during the model call: the person's message and a SessionStart with
// no SessionEnd.
func leaveOpenTurn(t *testing.T, h *turnHarness, session, instance, message string) {
	t.Helper()
	if err := (orchestrator.StoreHistory{Store: h.store}).Save(context.Background(), session, []llm.Message{llm.UserText(message)}); err != nil {
		t.Fatal(err)
	}
	ev := event.New(event.SessionStart, event.SessionContent{Model: "fake", Instance: instance})
	ev.Session, ev.Agent, ev.Time = session, event.OrchestratorID, clock
	if _, err := h.hub.Publish(ev); err != nil {
		t.Fatal(err)
	}
	// The turn went on a while: its start is not among the last events.
	for range 40 {
		ev := event.New(event.AssistantMessage, event.TextContent{Text: "working"})
		ev.Session, ev.Agent, ev.Time = session, event.OrchestratorID, clock
		if _, err := h.hub.Publish(ev); err != nil {
			t.Fatal(err)
		}
	}
}

// A turn whose process is gone is ended as interrupted at the session's
// next turn, in the stream and in the history, before the new request;
// one another live process runs is left alone.
func TestKilledTurnEndsInterruptedAtTheNextTurn(t *testing.T) {
	h := newTurnHarness(t, false, func(c *orchestrator.Config) {
		c.Owner = owners{gone: map[string]bool{"killed": true}}
		c.Events = c.Sessions.(event.Log) // the harness's store
	})
	ctx := context.Background()
	const gone, live = "ava:test:gone", "ava:test:live"
	leaveOpenTurn(t, h, gone, "killed", "the lost request")
	leaveOpenTurn(t, h, live, "alive", "a request another process answers")
	if _, err := h.o.Ask(ctx, gone, "", "are you there?"); err != nil {
		t.Fatal(err)
	}
	evs := h.events(t, gone)
	var kinds []string
	for _, ev := range evs {
		if ev.Type == event.SessionStart || ev.Type == event.SessionEnd {
			kinds = append(kinds, string(ev.Type)+":"+string(sessionContent(t, ev).Status))
		}
	}
	want := []string{"SessionStart:", "SessionEnd:interrupted", "SessionStart:", "SessionEnd:success"}
	if len(kinds) != len(want) || kinds[1] != want[1] || kinds[3] != want[3] {
		t.Fatalf("turns in the stream %q, want %q", kinds, want)
	}
	if c := sessionContent(t, evs[len(evs)-1]); c.Status != lifecycle.Success {
		t.Fatalf("last event %+v", c)
	}
	reqs := h.model.requests()
	got := texts(reqs[len(reqs)-1].Messages)
	if len(got) != 3 || got[0] != "the lost request" || got[1] != orchestrator.InterruptedNote || got[2] != "are you there?" {
		t.Fatalf("prompt after the killed turn %q", got)
	}
	// The live process's turn stays open.
	if _, err := h.o.Ask(ctx, live, "", "and here?"); err != nil {
		t.Fatal(err)
	}
	for _, ev := range h.events(t, live) {
		if ev.Type == event.SessionEnd && sessionContent(t, ev).Status == lifecycle.Interrupted {
			t.Fatalf("a live process's turn was ended")
		}
	}
}

// A turn discarded for the next message keeps the message it stored
// before its model call; the turn that answers both stores only the new
// part and its prompt holds the first once: both messages, as one.
func TestMergedTurnStoresEachMessageOnce(t *testing.T) {
	h := newTurnHarness(t, false, nil)
	const session = "ava:test:merged"
	cut, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("merged: %w (%w)", agent.ErrCancelled, orchestrator.ErrDiscarded))
	res, stored, err := h.o.AskMessage(cut, session, "", orchestrator.Message{Text: "find flights"})
	if err != nil || res.Status != lifecycle.Cancelled || stored != "find flights" {
		t.Fatalf("discarded turn: %+v %q %v", res.Status, stored, err)
	}
	_, stored, err = h.o.AskMessage(context.Background(), session, "", orchestrator.Message{Text: "find flights\n\nin May", Stored: []string{"find flights"}})
	if err != nil || stored != "in May" {
		t.Fatalf("merged turn stored %q: %v", stored, err)
	}
	reqs := h.model.requests()
	if got := texts(reqs[len(reqs)-1].Messages); len(got) != 1 || got[0] != "find flights\n\nin May" {
		t.Fatalf("merged prompt %q", got)
	}
	msgs, err := h.store.Messages(context.Background(), session, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[0].Text != "find flights" || msgs[1].Text != "in May" || msgs[2].Role != store.RoleAssistant {
		t.Fatalf("history %+v", msgs)
	}
}

// barrierLog holds each reader's first read of the stream until n
// readers have read it: processes that look at a session at the same
// moment.
type barrierLog struct {
	event.Log
	wait sync.WaitGroup
	once sync.Map // a reader's first read: *sync.Once by reader
}

func (l *barrierLog) reader(name string) event.Log { return &barrierReader{l: l, name: name} }

type barrierReader struct {
	l    *barrierLog
	name string
}

func (r *barrierReader) LastSeq(ctx context.Context, session string) (uint64, error) {
	return r.l.LastSeq(ctx, session)
}

func (r *barrierReader) AppendEvents(ctx context.Context, evs []event.Event) error {
	return r.l.AppendEvents(ctx, evs)
}

func (r *barrierReader) ReadEvents(ctx context.Context, session string, after uint64, limit int) ([]event.Event, error) {
	evs, err := r.l.ReadEvents(ctx, session, after, limit)
	o, _ := r.l.once.LoadOrStore(r.name, &sync.Once{})
	o.(*sync.Once).Do(func() {
		r.l.wait.Done()
		r.l.wait.Wait()
	})
	return evs, err
}

// Two daemons starting together after a kill -9 both find the same
// dead turn: the first to append its end ends it, the other, refused,
// looks again and writes nothing, so the stream has one SessionEnd and
// the history one note.
func TestTwoProcessesEndADeadTurnOnce(t *testing.T) {
	h := newTurnHarness(t, false, nil)
	const session = "ava:test:both"
	leaveOpenTurn(t, h, session, "killed", "the lost request")
	log := &barrierLog{Log: h.store}
	log.wait.Add(2)
	var ended [2]bool
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		o := orchestrator.New(orchestrator.Config{Hub: event.NewHub(h.store), History: orchestrator.StoreHistory{Store: h.store},
			Events: log.reader(fmt.Sprint(i)), Owner: owners{gone: map[string]bool{"killed": true}},
			Logger: slog.New(slog.DiscardHandler), Clock: func() time.Time { return clock }})
		wg.Go(func() { ended[i], errs[i] = o.EndInterrupted(context.Background(), session) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if ended[0] == ended[1] {
		t.Fatalf("ended by %v, want exactly one of the two", ended)
	}
	ends := 0
	for _, ev := range h.events(t, session) {
		if ev.Type == event.SessionEnd {
			ends++
		}
	}
	msgs, err := h.store.Messages(context.Background(), session, 0)
	if err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, m := range msgs {
		if m.Text == orchestrator.InterruptedNote {
			notes++
		}
	}
	if ends != 1 || notes != 1 {
		t.Fatalf("%d SessionEnds and %d notes, want one each", ends, notes)
	}
}

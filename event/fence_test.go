package event_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/avaagent/ava/event"
)

// leaseLog is a Log that checks leases as a store does: run r is owned
// by owners[r]; a leased append of another owner is refused. It counts
// the appends it refused, and holds every append until open is closed.
type leaseLog struct {
	event.Log
	open chan struct{}

	mu      sync.Mutex
	owners  map[string]string
	refused int
}

func (l *leaseLog) AppendEvents(ctx context.Context, evs []event.Event) error {
	<-l.open
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := evs[0].Fence; f.Leased() && l.owners[f.Run] != f.Owner {
		l.refused++
		return fmt.Errorf("run %s is not %s's: %w", f.Run, f.Owner, event.ErrFenced)
	}
	return l.Log.AppendEvents(ctx, evs)
}

// One commit of a session holds the events of a writer that lost the
// run's lease between events of one that holds it (a process that took
// over its own run under a new lease): only the stale writer's are
// refused, at once and without retries, and the others are numbered on
// with no hole; nothing refused reaches a sink or a subscriber, and
// nothing delivered carries its fence.
func TestFencedEventsRefusedAlone(t *testing.T) {
	log := &leaseLog{Log: event.NewMemoryLog(), open: make(chan struct{}), owners: map[string]string{"r": "new"}}
	var mu sync.Mutex
	var sunk []event.Event
	h := event.NewHub(log, event.SinkFunc(func(ev event.Event) error {
		mu.Lock()
		defer mu.Unlock()
		sunk = append(sunk, ev)
		return nil
	}))
	fences := []event.Fence{{}, {Run: "r", Owner: "new"}, {Run: "r", Owner: "old"}, {Run: "r", Owner: "old"},
		{Run: "r", Owner: "new"}, {}, {Run: "r", Owner: "old"}}
	type outcome struct {
		i   int
		ev  event.Event
		err error
	}
	done := make(chan outcome, len(fences))
	for i, f := range fences {
		// The first is held by the log; the others queue behind it and
		// are committed together.
		ev := event.Event{Session: "ava:subagent:S-000001", Type: event.ToolResult, Content: []byte(fmt.Sprintf(`{"i":%d}`, i)), Fence: f}
		h.PublishAsync(ev, func(ev event.Event, err error) { done <- outcome{i, ev, err} })
	}
	close(log.open)
	got := make([]outcome, len(fences))
	for range fences {
		o := <-done
		got[o.i] = o
	}
	var seq uint64
	for i, o := range got {
		stale := fences[i].Owner == "old"
		switch {
		case stale && !errors.Is(o.err, event.ErrFenced):
			t.Fatalf("event %d of the stale writer: error %v, want ErrFenced", i, o.err)
		case !stale && o.err != nil:
			t.Fatalf("event %d: %v", i, o.err)
		case !stale:
			if seq++; o.ev.Seq != seq {
				t.Fatalf("event %d numbered #%d, want #%d", i, o.ev.Seq, seq)
			}
			if o.ev.Fence != (event.Fence{}) {
				t.Fatalf("event %d delivered with its fence %+v", i, o.ev.Fence)
			}
		}
	}
	if log.refused != 2 {
		t.Fatalf("the log refused %d appends, want 2 (one per run of stale events, never retried)", log.refused)
	}
	stored, err := log.ReadEvents(ctx5(t), "ava:subagent:S-000001", 0, 0)
	if err != nil || uint64(len(stored)) != seq {
		t.Fatalf("%d events stored (%v), want %d", len(stored), err, seq)
	}
	mu.Lock()
	defer mu.Unlock()
	if uint64(len(sunk)) != seq {
		t.Fatalf("the sink saw %d events, want %d", len(sunk), seq)
	}
	sub := h.Subscribe("ava:subagent:S-000001", 0)
	defer sub.Close()
	evs := readAll(t, sub, seq)
	for _, ev := range evs {
		if ev.Fence != (event.Fence{}) {
			t.Fatalf("a subscriber saw a fence: %+v", ev)
		}
	}
	wantRun(t, evs, 1, seq)
}

// seqWriter stores events in a MemoryLog as a run's end would, counting
// its calls; it fails with err when set.
type seqWriter struct {
	log   event.Log
	calls int
	err   error
}

func (w *seqWriter) write(ctx context.Context, evs []event.Event) error {
	w.calls++
	if w.err != nil {
		return w.err
	}
	return w.log.AppendEvents(ctx, evs)
}

// PublishWith stores its events with the caller's write (a run's end),
// after what was queued before them, numbered again when another
// process took their numbers; a write that fails delivers nothing and
// is not retried.
func TestPublishWith(t *testing.T) {
	const key = "ava:subagent:S-000002"
	log := event.NewMemoryLog()
	h := event.NewHub(log)
	h.Fresh(key)
	for range 3 {
		h.PublishAsync(event.Event{Session: key, Type: event.ToolCall}, nil)
	}
	w := &seqWriter{log: log}
	end := []event.Event{{Session: key, Type: event.Error}, {Session: key, Type: event.SessionEnd}}
	// Wait for the three queued events; another process then takes #4,
	// so ours take #5 and #6.
	sub := h.Subscribe(key, 0)
	readAll(t, sub, 3)
	sub.Close()
	if err := log.AppendEvents(ctx5(t), []event.Event{{Session: key, Seq: 4, Type: event.ToolResult}}); err != nil {
		t.Fatal(err)
	}
	out, err := h.PublishWith(ctx5(t), end, w.write)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Seq != 5 || out[1].Seq != 6 || w.calls != 2 {
		t.Fatalf("stored %+v in %d writes, want #5 and #6 in 2 (one refused as taken)", out, w.calls)
	}
	// A failing write: nothing stored or delivered, one call.
	failing := &seqWriter{log: log, err: errors.New("run ended elsewhere")}
	out, err = h.PublishWith(ctx5(t), end, failing.write)
	if err == nil || out != nil || failing.calls != 1 {
		t.Fatalf("failing write: %v, %+v, %d calls", err, out, failing.calls)
	}
	pub(t, h, key, 1)
	stored, _ := log.ReadEvents(ctx5(t), key, 0, 0)
	if len(stored) != 7 || stored[6].Type != event.UserMessage {
		t.Fatalf("stored %d events, want 7 with the next publish right after the end", len(stored))
	}
	if _, err := h.PublishWith(ctx5(t), []event.Event{{Session: key, Type: event.TextDelta}}, w.write); err == nil {
		t.Fatal("a live-only event was taken by PublishWith")
	}
}

// Two processes that read a stream at the same point and both decide
// to append to it (two daemons closing one dead turn): with Follows,
// the first stores and the second is refused, whatever its hub knew.
func TestFollowsComparesAndAppends(t *testing.T) {
	const key = "ava:cli:turn"
	log := event.NewMemoryLog()
	a, b := event.NewHub(log), event.NewHub(log)
	pub(t, a, key, 3)
	pub(t, b, key, 0) // b's journal exists, numbered from the log later
	end := func() event.Event {
		return event.Event{Session: key, Agent: "ava", Type: event.SessionEnd, Fence: event.Fence{Follows: 3}}
	}
	if ev, err := a.Publish(end()); err != nil || ev.Seq != 4 {
		t.Fatalf("first: #%d, %v", ev.Seq, err)
	}
	if _, err := b.Publish(end()); !errors.Is(err, event.ErrFenced) {
		t.Fatalf("second: %v, want ErrFenced", err)
	}
	// A stale read on the same hub is refused too, and leaves no hole.
	if _, err := a.Publish(end()); !errors.Is(err, event.ErrFenced) {
		t.Fatalf("stale read: %v, want ErrFenced", err)
	}
	if _, err := a.Publish(event.Event{Session: key, Type: event.SessionEnd, Fence: event.Fence{Follows: 9}}); !errors.Is(err, event.ErrFenced) {
		t.Fatalf("read ahead of the stream: %v, want ErrFenced", err)
	}
	pub(t, b, key, 1)
	stored, _ := log.ReadEvents(ctx5(t), key, 0, 0)
	wantRun(t, stored, 1, 5)
}

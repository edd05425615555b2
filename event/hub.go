package event

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Sink receives every published event, in sequence order per session.
// Deliver blocks while the sink cannot take more (back-pressure) and
// returns an error when the event could not be made durable.
type Sink interface {
	Deliver(ev Event) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event) error

// Deliver implements Sink.
func (f SinkFunc) Deliver(ev Event) error { return f(ev) }

// Publisher is what agents publish through.
type Publisher interface {
	Publish(ev Event) (Event, error)
}

// DefaultRetain is how many recent events a session's journal keeps in
// memory for subscribers.
const DefaultRetain = 4096

// Hub routes events to sinks and to per-session journals. It is safe for
// concurrent use.
type Hub struct {
	sinks  []Sink
	retain int
	now    func() time.Time

	mu       sync.Mutex
	journals map[string]*Journal
}

// NewHub returns a hub delivering to sinks in the given order.
func NewHub(sinks ...Sink) *Hub {
	return &Hub{sinks: sinks, retain: DefaultRetain, now: time.Now, journals: map[string]*Journal{}}
}

// SetRetain sets how many events each new journal keeps (tests).
func (h *Hub) SetRetain(n int) { h.retain = n }

// Journal returns the session's journal, creating it (sequence starting
// after lastSeq, the highest number already stored for it) if needed.
func (h *Hub) Journal(session string, lastSeq uint64) *Journal {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.journals[session]
	if !ok {
		j = newJournal(session, lastSeq, h.retain)
		h.journals[session] = j
	}
	return j
}

// Lookup returns the session's journal if it exists.
func (h *Hub) Lookup(session string) (*Journal, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.journals[session]
	return j, ok
}

// Forget drops a finished session's journal from memory, waking its
// subscribers with ErrClosed once they have read everything.
func (h *Hub) Forget(session string) {
	h.mu.Lock()
	j, ok := h.journals[session]
	delete(h.journals, session)
	h.mu.Unlock()
	if ok {
		j.Close()
	}
}

// Publish stamps ev with the next sequence number of its session (and the
// time, if unset), hands it to every sink, then to subscribers. It
// returns the stamped event. A sink error is returned after the remaining
// sinks and subscribers have seen the event, so a broken audit disk does
// not hide events from the live view.
func (h *Hub) Publish(ev Event) (Event, error) {
	if ev.Session == "" {
		return ev, errors.New("publish: event has no session")
	}
	if ev.Time.IsZero() {
		ev.Time = h.now()
	}
	ev.Time = ev.Time.UTC()
	j := h.Journal(ev.Session, 0)
	j.pub.Lock()
	defer j.pub.Unlock()
	ev.Seq = j.reserve()
	var errs []error
	for _, s := range h.sinks {
		if err := s.Deliver(ev); err != nil {
			errs = append(errs, err)
		}
	}
	j.append(ev)
	if err := errors.Join(errs...); err != nil {
		return ev, fmt.Errorf("publish %s #%d to %s: %w", ev.Type, ev.Seq, ev.Session, err)
	}
	return ev, nil
}

// ErrClosed is returned by Subscription.Next once a closed journal has
// been read to its end.
var ErrClosed = errors.New("event stream closed")

// Journal is one session's recent events and its subscribers' meeting
// point.
type Journal struct {
	session string
	pub     sync.Mutex // serialises Publish for this session

	mu     sync.Mutex
	events []Event // the retained window, in sequence order
	next   uint64  // the next sequence number to hand out
	retain int
	wake   chan struct{} // closed and replaced on every append
	closed bool
}

func newJournal(session string, lastSeq uint64, retain int) *Journal {
	if retain <= 0 {
		retain = DefaultRetain
	}
	return &Journal{session: session, next: lastSeq + 1, retain: retain, wake: make(chan struct{})}
}

func (j *Journal) reserve() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.next
	j.next++
	return s
}

func (j *Journal) append(ev Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, ev)
	if over := len(j.events) - j.retain; over > 0 {
		// Copy down so the backing array does not grow without bound.
		n := copy(j.events, j.events[over:])
		clear(j.events[n:])
		j.events = j.events[:n]
	}
	close(j.wake)
	j.wake = make(chan struct{})
}

// LastSeq is the highest sequence number handed out so far.
func (j *Journal) LastSeq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next - 1
}

// Close marks the journal finished: subscribers drain what is left and
// then get ErrClosed.
func (j *Journal) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed {
		j.closed = true
		close(j.wake)
	}
}

// Subscribe returns a subscription that yields the events after seq
// (0 for all that are retained), then live ones.
func (j *Journal) Subscribe(after uint64) *Subscription {
	return &Subscription{j: j, cursor: after}
}

// since returns the retained events after cursor, a gap if some were
// evicted, a channel that is closed on the next change, and whether the
// journal is closed.
func (j *Journal) since(cursor uint64) ([]Event, *GapContent, <-chan struct{}, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.events) == 0 {
		return nil, nil, j.wake, j.closed
	}
	first := j.events[0].Seq
	var gap *GapContent
	if cursor+1 < first {
		gap = &GapContent{From: cursor + 1, To: first - 1}
		cursor = first - 1
	}
	i := int(cursor + 1 - first)
	if i >= len(j.events) {
		return nil, gap, j.wake, j.closed
	}
	out := make([]Event, len(j.events)-i)
	copy(out, j.events[i:])
	return out, gap, j.wake, j.closed
}

// Subscription reads a journal from a cursor. It is not safe for
// concurrent use; each reader takes its own.
type Subscription struct {
	j      *Journal
	cursor uint64
}

// Cursor is the sequence number of the last event returned.
func (s *Subscription) Cursor() uint64 { return s.cursor }

// Next blocks until there are events after the cursor and returns them in
// order. When the subscriber fell behind the retained window, the batch
// starts with a Gap event naming what was missed. It returns ctx's error
// when ctx is done, and ErrClosed when the journal is closed and read.
func (s *Subscription) Next(ctx context.Context) ([]Event, error) {
	for {
		evs, wake, closed := s.take()
		if len(evs) > 0 {
			return evs, nil
		}
		if closed {
			return nil, ErrClosed
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		}
	}
}

// Poll returns the events after the cursor without waiting (nil when
// there are none), with a leading Gap event if some were missed.
func (s *Subscription) Poll() []Event {
	evs, _, _ := s.take()
	return evs
}

// take returns the events after the cursor (a Gap first if some were
// evicted) and moves the cursor past them; wake is closed on the next
// change, and closed reports a closed journal.
func (s *Subscription) take() (evs []Event, wake <-chan struct{}, closed bool) {
	evs, gap, wake, closed := s.j.since(s.cursor)
	if len(evs) > 0 {
		s.cursor = evs[len(evs)-1].Seq
	}
	if gap != nil {
		g := New(Gap, gap)
		g.Session, g.Seq, g.Time = s.j.session, gap.From, time.Now().UTC()
		s.cursor = max(s.cursor, gap.To)
		evs = append([]Event{g}, evs...)
	}
	return evs, wake, closed
}

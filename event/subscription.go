package event

import (
	"context"
	"fmt"
)

// replayBatch is how many stored events a subscription reads from the Log
// at a time.
const replayBatch = 512

// maxAttachMisses bounds how often a subscription finds the Log behind
// the journal in memory before it reports the Log broken. (A miss is a
// race with Publish, which stores before it appends; it resolves at once.)
const maxAttachMisses = 8

// Subscription reads one session's events from a sequence number on:
// first the stored ones it has not seen, from the Log, then live ones
// from the journal in memory. It never skips a kept event and never
// returns one twice: a subscriber that falls behind the window in memory,
// or meets a number published by another process, reads the Log until it
// has caught up. Live-only events are seen only while caught up. It is
// not safe for concurrent use; each reader takes its own.
type Subscription struct {
	j        *Journal
	after    uint64 // the last kept sequence number returned
	pos      uint64 // the next journal position to read, when attached
	attached bool
	counted  bool // made by Hub.Subscribe: Close releases the journal
	follow   bool // made by Hub.Follow: outlives its journal
	closed   bool
	buf      []Event // what Ready returned last, reused by the next Ready
}

// Close ends the subscription. A journal opened only for reading leaves
// memory when its last subscription is closed. Closing twice is a no-op.
func (s *Subscription) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.counted {
		s.j.hub.unsubscribe(s.j)
	}
}

// Cursor is the sequence number of the last kept event returned.
func (s *Subscription) Cursor() uint64 { return s.after }

// Next blocks until there are events after the cursor and returns them in
// order, in a slice of the caller's own (it may hand them to another
// goroutine and call Next again). It returns ctx's error when ctx is
// done, ErrClosed when the journal is closed and read (never for
// Hub.Follow's), and an error when the Log cannot be read.
func (s *Subscription) Next(ctx context.Context) ([]Event, error) {
	for {
		evs, wake, err := s.ready(ctx, false)
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		}
	}
}

// Ready is Next without the wait, for a reader that waits on more than
// the subscription in one select (a live stream with its heartbeat): it
// returns the events after the cursor that can be read now (none when
// there are none) and a channel closed when more may be ready, so the
// reader needs no goroutine of its own between the journal and its
// select. Its errors are Next's. The events are valid until the next
// call: Ready reuses their memory, so that a live stream allocates
// nothing per event.
func (s *Subscription) Ready(ctx context.Context) ([]Event, <-chan struct{}, error) {
	return s.ready(ctx, true)
}

// ready is Ready; reuse says whether the events may be put in the memory
// of the ones it returned last (Ready's), or go in a new slice (Next's).
func (s *Subscription) ready(ctx context.Context, reuse bool) ([]Event, <-chan struct{}, error) {
	for {
		var buf []Event
		if reuse {
			buf = s.buf[:0]
		}
		evs, wake, closed, err := s.take(ctx, buf)
		switch {
		case err != nil:
			return nil, nil, err
		case len(evs) > 0:
			if wake == nil { // read from the Log: more may be there now
				wake = readyNow
			} else if reuse {
				s.buf = evs
			}
			return evs, wake, nil
		case closed && s.follow && !s.closed:
			s.reattach()
		case closed:
			return nil, nil, ErrClosed
		default:
			return nil, wake, nil
		}
	}
}

// readyNow is a closed channel: more events may be read at once.
var readyNow = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Poll returns the events after the cursor without waiting for new ones
// (nil when there are none).
func (s *Subscription) Poll(ctx context.Context) ([]Event, error) {
	evs, _, _, err := s.take(ctx, nil)
	return evs, err
}

// take returns what can be read now: stored events while catching up,
// else the journal's new entries, appended to buf (which may be nil).
func (s *Subscription) take(ctx context.Context, buf []Event) (evs []Event, wake <-chan struct{}, closed bool, err error) {
	for misses := 0; !s.attached; misses++ {
		if misses == maxAttachMisses {
			return nil, nil, false, fmt.Errorf("replay %s: event #%d is in memory but not in the log", s.j.session, s.after+1)
		}
		stored, err := s.j.hub.log.ReadEvents(ctx, s.j.session, s.after, replayBatch)
		if err != nil {
			return nil, nil, false, fmt.Errorf("replay %s after #%d: %w", s.j.session, s.after, err)
		}
		if len(stored) > 0 {
			s.after = stored[len(stored)-1].Seq
			return stored, nil, false, nil
		}
		s.pos, s.attached = s.j.attach(s.after)
	}
	entries, evicted, wake, closed := s.j.window(buf, s.pos)
	if evicted {
		s.attached = false
		return s.take(ctx, buf)
	}
	evs = entries[:0] // filtered in place: entries is this call's copy
	for _, ev := range entries {
		switch {
		case ev.Seq == 0:
		case ev.Seq <= s.after:
			s.pos++
			continue
		case ev.Seq != s.after+1:
			// A hole: numbers published by another process, or a
			// stored event this window never had. Read them first.
			s.attached = false
			if len(evs) > 0 {
				return evs, nil, false, nil
			}
			return s.take(ctx, buf)
		default:
			s.after = ev.Seq
		}
		s.pos++
		evs = append(evs, ev)
	}
	return evs, wake, closed, nil
}

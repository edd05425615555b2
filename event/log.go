package event

import (
	"context"
	"errors"
	"sync"
)

// ErrSeqTaken is returned by Log.AppendEvent when the event's sequence
// number is already stored for its session.
var ErrSeqTaken = errors.New("sequence number already taken")

// ErrLogClosed is returned by a Log that was closed: no retry can
// succeed, so Publish gives up at once.
var ErrLogClosed = errors.New("the event log is closed")

// ErrFenced is wrapped by the error of an event whose Fence did not hold
// when it was to be stored: the writer no longer holds the run's lease
// (another process owns it, or it has ended), or the stream moved past
// the number a compare-and-append followed. Nothing of it was stored;
// a retry cannot succeed, so Publish gives up at once.
var ErrFenced = errors.New("the event's fence does not hold: the writer no longer holds the run, or the stream moved on")

// Log is the durable record of every session's kept events, which makes
// their sequence numbers durable and replayable. The store implements it
// (an events table); MemoryLog is for tests and embedders without one.
// Implementations are safe for concurrent use, also across processes.
type Log interface {
	// LastSeq returns the highest sequence number stored for session, 0
	// if none.
	LastSeq(ctx context.Context, session string) (uint64, error)
	// AppendEvents stores evs (of one session, numbered in increasing
	// order, all with one Fence) in one write: all of them, or none and
	// an error (wrapping ErrSeqTaken when a number is taken). A Fence
	// with a lease (Fence.Leased) is checked in the same statement or
	// transaction as the insert: when its owner no longer owns its run,
	// or the run is not active, nothing is stored and the error wraps
	// ErrFenced.
	AppendEvents(ctx context.Context, evs []Event) error
	// ReadEvents returns up to limit of the session's events numbered
	// after after, in order.
	ReadEvents(ctx context.Context, session string, after uint64, limit int) ([]Event, error)
}

// MemoryLog is a Log in memory: numbering and replay within one process,
// nothing durable. It records no runs, so it stores a leased event
// unchecked.
type MemoryLog struct {
	mu       sync.Mutex
	sessions map[string][]Event
}

// NewMemoryLog returns an empty MemoryLog.
func NewMemoryLog() *MemoryLog { return &MemoryLog{sessions: map[string][]Event{}} }

// LastSeq implements Log.
func (l *MemoryLog) LastSeq(_ context.Context, session string) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.sessions[session]
	if len(evs) == 0 {
		return 0, nil
	}
	return evs[len(evs)-1].Seq, nil
}

// AppendEvents implements Log.
func (l *MemoryLog) AppendEvents(_ context.Context, evs []Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ev := range evs {
		prev := uint64(0)
		if i > 0 {
			prev = evs[i-1].Seq
		} else if have := l.sessions[ev.Session]; len(have) > 0 {
			prev = have[len(have)-1].Seq
		}
		if ev.Seq <= prev {
			return ErrSeqTaken
		}
	}
	for _, ev := range evs {
		ev.Fence = Fence{} // a write's condition, not stored
		l.sessions[ev.Session] = append(l.sessions[ev.Session], ev)
	}
	return nil
}

// ReadEvents implements Log.
func (l *MemoryLog) ReadEvents(_ context.Context, session string, after uint64, limit int) ([]Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, ev := range l.sessions[session] {
		if ev.Seq > after {
			out = append(out, ev)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

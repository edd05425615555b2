package event

import (
	"context"
	"errors"
	"sync"
)

// ErrSeqTaken is returned by Log.AppendEvent when the event's sequence
// number is already stored for its session.
var ErrSeqTaken = errors.New("sequence number already taken")

// Log is the durable record of every session's kept events, which makes
// their sequence numbers durable and replayable. The store implements it
// (an events table); MemoryLog is for tests and embedders without one.
// Implementations are safe for concurrent use, also across processes.
type Log interface {
	// LastSeq returns the highest sequence number stored for session, 0
	// if none.
	LastSeq(ctx context.Context, session string) (uint64, error)
	// AppendEvent stores ev under ev.Seq. If the session already has an
	// event with that number it stores nothing and returns an error
	// wrapping ErrSeqTaken.
	AppendEvent(ctx context.Context, ev Event) error
	// ReadEvents returns up to limit of the session's events numbered
	// after after, in order.
	ReadEvents(ctx context.Context, session string, after uint64, limit int) ([]Event, error)
}

// MemoryLog is a Log in memory: numbering and replay within one process,
// nothing durable.
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

// AppendEvent implements Log. Numbers must be appended in increasing
// order.
func (l *MemoryLog) AppendEvent(_ context.Context, ev Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.sessions[ev.Session]
	if len(evs) > 0 && evs[len(evs)-1].Seq >= ev.Seq {
		return ErrSeqTaken
	}
	l.sessions[ev.Session] = append(evs, ev)
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

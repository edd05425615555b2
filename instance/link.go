package instance

import (
	"errors"
	"sync"
	"time"

	"github.com/avaagent/ava/store"
)

// Judging liveness net of outages (issue 39 items 2 and 4).
//
// A heartbeat older than the TTL means its process stopped renewing only
// if the store could take its renewals all that time. After the
// database was paused or stopped for longer than the TTL, every live
// process's heartbeat is that old when it comes back, and a judge that
// compared ages at once took the runs of live processes over (13 of
// another worker's runs after a 101 s pause, their work repeated).
//
// So a judge counts a heartbeat's age against an owner only once it has
// itself seen the store answer without a break for longer than the TTL:
// its own calls to the store (registration, a heartbeat every
// Options.Heartbeat, its looks at the registrations) each answered, and
// none took longer than a heartbeat interval. A failed call (a stopped
// database refuses) or one that hung (a paused one answers late, not
// with an error) starts the count again when the store next answers.
// An outage longer than two heartbeat intervals always meets one of
// this process's heartbeats, which fails or hangs; a shorter one leaves
// no heartbeat near the TTL (six intervals by default). A pause of this
// process itself does not matter: the store was up, and the others
// renewed. A live owner renews
// within a heartbeat once the store is back, long before that count
// reaches the TTL, and keeps its runs; only an owner whose lease lapsed
// while the store was up is taken over. A new process starts its count
// at its registration: it judges by age one TTL after it started
// (a dead owner on this host is still found at once by its process ID).
//
// The count is this process's own observation, by the monotonic clock
// for breaks and by the instance's clock (Options.Clock) for the TTL,
// the clock heartbeats are compared with.

// link is what this process saw of the store.
type link struct {
	mu      sync.Mutex
	upSince time.Time // by the instance's clock: since when it answered without a break
	upSeen  bool      // upSince is set (the store answered since the last break)
	seen    bool      // the store answered at least once (for the log)
	// calls holds the monotonic start of each call in flight: one that
	// has waited longer than a heartbeat interval is an outage now,
	// before it returns.
	calls map[uint64]time.Time
	next  uint64
}

// call runs fn, a call to the store, and records how it answered.
func (in *Instance) call(fn func() error) error {
	l := &in.link
	start := time.Now()
	l.mu.Lock()
	if l.calls == nil {
		l.calls = map[uint64]time.Time{}
	}
	l.next++
	id := l.next
	l.calls[id] = start
	l.mu.Unlock()
	err := fn()
	l.mu.Lock()
	delete(l.calls, id)
	l.mu.Unlock()
	in.answered(start, err)
	return err
}

// answered records a call to the store that started at start (by the
// monotonic clock) and returned err.
func (in *Instance) answered(start time.Time, err error) {
	took := time.Since(start)
	wall := in.now()
	l := &in.link
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil && !errors.Is(err, store.ErrNotFound) { // not found is an answer
		l.upSeen = false
		return
	}
	if took > in.opt.Heartbeat {
		l.upSeen = false // it hung: the store was out meanwhile
	}
	if !l.upSeen {
		if l.seen {
			in.log.Info("the store answers again after a break; other processes' heartbeats are judged by age once it has answered for the TTL", "ttl", in.opt.TTL, "call", took.Round(time.Millisecond))
		}
		l.upSince, l.upSeen = wall, true
	}
	l.seen = true
}

// mayJudgeAge reports whether this process has seen the store answer
// without a break for longer than the TTL, as of now (the instance's
// clock): only then does a heartbeat's age say its owner stopped.
func (in *Instance) mayJudgeAge(now time.Time) bool {
	l := &in.link
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.upSeen {
		return false
	}
	for _, start := range l.calls {
		if time.Since(start) > in.opt.Heartbeat {
			return false
		}
	}
	return now.Sub(l.upSince) > in.opt.TTL
}

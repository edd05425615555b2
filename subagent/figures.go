package subagent

import (
	"math"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// A run's figures are defined here once, for a live handle and a stored
// record alike, so that every surface shows the same numbers:
//   - tokens, cost and iterations over all its turns (its first and its
//     follow-ups; the running turn's so far included);
//   - active time: the time it spent running, summed over its turns,
//     without the idle time between turns or the time it waited in the
//     queue (RunStatus.Elapsed, Result.DurationSeconds, what estimates
//     learn from);
//   - wall time: from its first start to its last end, or now while it
//     is active (RunStatus.Wall, what a timeline bar spans).
//
// The store's record holds them durably: tokens, cost and iterations as
// of the run's last end or checkpoint, its active time as of its last
// end, and when its running turn started.

// counters are a run's tokens, cost, model calls and active time.
type counters struct {
	tokens     int
	cost       float64
	iterations int
	active     time.Duration
}

// plus is c and o added up.
func (c counters) plus(o counters) counters {
	return counters{tokens: c.tokens + o.tokens, cost: c.cost + o.cost, iterations: c.iterations + o.iterations, active: c.active + o.active}
}

// countersOf are a stored run's figures (its active time is that of its
// ended turns).
func countersOf(r store.Run) counters {
	return counters{tokens: r.Tokens, cost: r.CostCents, iterations: r.Iterations, active: r.Active}
}

// resultCounters are the run figures a result carries.
func resultCounters(r *Result) counters {
	if r == nil {
		return counters{}
	}
	return counters{tokens: r.TokensUsed, cost: r.CostCents, iterations: r.Iterations, active: r.Active()}
}

// Active is the run's active time the result carries (DurationSeconds),
// back to the exact duration it was made from: what its completion line
// shows must be the list's figure to the millisecond, and a float's
// seconds times 1000, cut, is 1 ms short for about one duration in a
// hundred (1001 ms read as 1000).
func (r Result) Active() time.Duration {
	return time.Duration(math.Round(r.DurationSeconds * float64(time.Second)))
}

// figures are what a run's status is computed from.
type figures struct {
	// used is what the run used over all its turns; its active time is
	// that of its ended turns.
	used counters
	// turnStart is when its running turn started (zero when none runs):
	// the time since counts as active.
	turnStart time.Time
	// first is its first start, end its last end (zero while active).
	first, end time.Time
}

// storedFigures are a stored run's figures.
func storedFigures(r store.Run) figures {
	f := figures{used: countersOf(r)}
	if r.StartedAt != nil {
		f.first = *r.StartedAt
	}
	if r.EndedAt != nil && r.Status.Final() {
		f.end = *r.EndedAt
	}
	if r.Status == lifecycle.Running {
		switch {
		case r.TurnStartedAt != nil:
			f.turnStart = *r.TurnStartedAt
		case r.StartedAt != nil:
			f.turnStart = *r.StartedAt
		}
	}
	return f
}

// set fills st's figures as of now.
func (f figures) set(st *RunStatus, now time.Time) {
	st.Tokens, st.CostCents, st.Iteration = f.used.tokens, f.used.cost, f.used.iterations
	st.Elapsed = f.used.active
	if !f.turnStart.IsZero() && now.After(f.turnStart) {
		st.Elapsed += now.Sub(f.turnStart)
	}
	st.StartedAt, st.EndedAt = f.first, f.end
	switch {
	case f.first.IsZero():
	case !f.end.IsZero():
		st.Wall = f.end.Sub(f.first)
	default:
		st.Wall = now.Sub(f.first)
	}
	st.Wall = max(st.Wall, st.Elapsed) // clocks of two processes may disagree a little
}

// since is what c used beyond prior, never below zero (active time is
// left out: a record's active time is that of its ended turns).
func (c counters) since(prior counters) counters {
	return counters{tokens: max(c.tokens-prior.tokens, 0), cost: max(c.cost-prior.cost, 0),
		iterations: max(c.iterations-prior.iterations, 0)}
}

// adopt sets a handle rebuilt from a stored run's record to its figures
// (h.mu held, or h not yet shared): what its ended turns used, its first
// start, its running (or last) turn's start and its last end, and the
// waits for the person its last result kept.
func (h *Handle) adopt(r store.Run) {
	h.total = countersOf(r)
	h.waits = storedWaits(r.Result)
	if r.StartedAt != nil {
		h.firstStart, h.startedAt = *r.StartedAt, *r.StartedAt
	}
	if r.TurnStartedAt != nil {
		h.startedAt = *r.TurnStartedAt
	}
	if r.EndedAt != nil && r.Status.Final() {
		h.endedAt = *r.EndedAt
	}
}

// adoptResumed sets a handle rebuilt to resume a run (h not yet shared)
// to its figures: its record's counters are those of its ended turns,
// which its last result carries, plus what its running turn used before
// it stopped (h.base), which its limits are lowered by.
func (h *Handle) adoptResumed(r store.Run, last *Result) {
	h.adopt(r)
	if r.Status == lifecycle.Queued {
		return // a queued turn has used nothing yet
	}
	prior := resultCounters(last)
	prior.active = r.Active
	h.total, h.base = prior, countersOf(r).since(prior)
}

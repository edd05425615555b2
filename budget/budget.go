// Package budget makes a session's budget (--budget, the store's
// BudgetCents) one budget: the orchestrator's turn and every subagent the
// session started draw from it live, call by call, through one Ledger.
//
// What is left of a session's budget is its cap, minus the spend the
// store holds (ended turns and ended runs, SpentCents), minus the spend of
// the turns and runs still going on in this process (each a Share, whose
// settled calls the store does not hold yet), minus what their calls in
// flight have reserved. Each Share is an agent.Budget: before a model
// call the agent loop reserves what the call may cost at most and
// settles with what it cost. So the orchestrator's own spend in the
// running turn counts against what its subagents may still spend, and
// theirs against its next call, before either is stored.
//
// A participant leaves (Share.Leave) once its spend is in the store. The
// store's figure is read under the ledger's lock, so a Reserve sees a
// leaving participant's spend at least once (twice for a moment, between
// the store's write and Leave: the error is on the safe side).
//
// The ledger is one process's: in a cluster a subagent running on a
// worker is not a Share here; its spend counts once the store has it and,
// at admission, by its cap (see subagent's clusterReservedCents).
package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/store"
)

// Source reads a session's budget and the spend stored for it
// (store.Store has it).
type Source interface {
	GetSession(ctx context.Context, key string) (store.Session, error)
}

// Ledger holds the live spend of the sessions' running turns and runs.
// Safe for concurrent use.
type Ledger struct {
	src Source

	mu       sync.Mutex
	sessions map[string]*account
}

// account is one session's live figures.
type account struct {
	shares   map[*Share]struct{}
	reserved float64
	// held counts the reservations not settled yet: the float sum may
	// not come back to exactly 0.
	held int
	// freed is closed (and replaced) whenever a reservation settles or a
	// share leaves, waking the calls waiting for budget.
	freed chan struct{}
}

// NewLedger returns a ledger over src.
func NewLedger(src Source) *Ledger {
	return &Ledger{src: src, sessions: map[string]*account{}}
}

// Standing is a session's budget as the ledger sees it.
type Standing struct {
	// Limited says the session has a budget; the other figures are 0
	// without one.
	Limited bool
	Budget  float64
	// Stored is the spend the store holds; Live that of this process's
	// running turns and runs not stored yet; Reserved what their calls
	// in flight may still cost.
	Stored, Live, Reserved float64
}

// Left is what may still be spent (negative when over).
func (s Standing) Left() float64 { return s.Budget - s.Stored - s.Live - s.Reserved }

// Spent is what was spent, stored or live.
func (s Standing) Spent() float64 { return s.Stored + s.Live }

// Standing reads the session's budget and spend. A session the store
// does not know has no budget.
func (l *Ledger) Standing(ctx context.Context, session string) (Standing, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.standing(ctx, session)
}

// standing is Standing with l.mu held.
func (l *Ledger) standing(ctx context.Context, session string) (Standing, error) {
	s, err := l.src.GetSession(ctx, session)
	if errors.Is(err, store.ErrNotFound) {
		return Standing{}, nil
	}
	if err != nil {
		return Standing{}, fmt.Errorf("read the budget of session %s: %w", session, err)
	}
	if s.BudgetCents <= 0 {
		return Standing{}, nil
	}
	st := Standing{Limited: true, Budget: s.BudgetCents, Stored: s.SpentCents}
	if a := l.sessions[session]; a != nil && a.held > 0 {
		st.Reserved = max(a.reserved, 0)
	}
	if a := l.sessions[session]; a != nil {
		for sh := range a.shares {
			st.Live += sh.spent
		}
	}
	return st, nil
}

// Join adds a participant (a turn, a subagent's run) to the session's
// live spend. It must Leave once its spend is stored.
func (l *Ledger) Join(session string) *Share {
	l.mu.Lock()
	defer l.mu.Unlock()
	sh := &Share{l: l, session: session}
	l.account(session).shares[sh] = struct{}{}
	return sh
}

// account returns the session's account, made if missing; l.mu held.
func (l *Ledger) account(session string) *account {
	a := l.sessions[session]
	if a == nil {
		a = &account{shares: map[*Share]struct{}{}, freed: make(chan struct{})}
		l.sessions[session] = a
	}
	return a
}

// drop forgets the session's account once nothing of it is live; l.mu
// held.
func (l *Ledger) drop(session string, a *account) {
	if len(a.shares) == 0 && a.held == 0 {
		delete(l.sessions, session)
	}
}

// Share is one participant's part of a session's budget: an
// agent.Budget whose reservations come out of what the whole session
// has left.
type Share struct {
	l       *Ledger
	session string
	spent   float64 // under l.mu
	left    bool    // under l.mu
}

var _ agent.Budget = (*Share)(nil)

// Reserve implements agent.Budget. A call gets all it wants when the
// session has that left. When less is left and other calls hold
// reservations it waits for them to settle; when none is held it gets
// what is left if that is at least least, and is refused with
// agent.ErrCostExceeded otherwise. A session with no budget grants all.
func (s *Share) Reserve(ctx context.Context, want, least float64) (float64, func(float64), error) {
	l := s.l
	for {
		l.mu.Lock()
		st, err := l.standing(ctx, s.session)
		if err != nil {
			l.mu.Unlock()
			return 0, nil, err
		}
		a := l.account(s.session)
		if !st.Limited {
			a.reserved, a.held = a.reserved+want, a.held+1
			l.mu.Unlock()
			return want, s.settler(want), nil
		}
		left := st.Left()
		if left >= want || a.held == 0 && left >= least {
			granted := min(want, left)
			a.reserved, a.held = a.reserved+granted, a.held+1
			l.mu.Unlock()
			return granted, s.settler(granted), nil
		}
		if a.held == 0 {
			l.mu.Unlock()
			return 0, nil, fmt.Errorf("%w: the session spent %.4f¢ of its %.2f¢ budget (its turns and subagents together); the next call needs at least %.4f¢",
				agent.ErrCostExceeded, st.Spent(), st.Budget, least)
		}
		freed := a.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return 0, nil, context.Cause(ctx)
		}
	}
}

// settler returns the settle function of a reservation of granted
// cents: it releases the reservation, adds what was spent to the share
// and wakes the waiting calls. Calls after the first do nothing.
func (s *Share) settler(granted float64) func(float64) {
	var once sync.Once
	return func(spent float64) {
		once.Do(func() {
			l := s.l
			l.mu.Lock()
			defer l.mu.Unlock()
			a := l.account(s.session)
			a.reserved, a.held = a.reserved-granted, a.held-1
			if a.held == 0 {
				a.reserved = 0
			}
			if !s.left {
				s.spent += spent
			}
			a.wake()
			l.drop(s.session, a)
		})
	}
}

// Spent is what the participant's settled calls cost.
func (s *Share) Spent() float64 {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	return s.spent
}

// Leave takes the participant out of the live spend: call it once its
// spend is stored (or, if it cannot be, once it is given up). Calls after
// the first do nothing.
func (s *Share) Leave() {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.left {
		return
	}
	s.left = true
	a := l.account(s.session)
	delete(a.shares, s)
	a.wake()
	l.drop(s.session, a)
}

// wake wakes the calls waiting for budget.
func (a *account) wake() {
	close(a.freed)
	a.freed = make(chan struct{})
}

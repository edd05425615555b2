package subagent

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/store"
)

// proposals is the pending-spawn lifecycle: propose (gate), list,
// decide, expire (proposal.go, decide.go). The store holds the
// proposals and decides each one once across processes; the lock guards
// only the claim set (the proposals being decided in this process, so a
// second answer to the same proposal is refused at once), and the spans
// of the calls that proposed are a sync.Map. It reaches the runtime only
// through spawner: it never takes the Manager's lock.
type proposals struct {
	rt    spawner
	store store.Store
	hub   *event.Hub
	// conf is the policy and how long a proposal waits for the person
	// (SetConfirm swaps it).
	conf      atomic.Pointer[confirmRule]
	traced    bool // keep the proposing calls' spans
	rand      io.Reader
	observers *observe.Set
	mask      func(string) string
	now       func() time.Time
	log       *slog.Logger

	mu       sync.Mutex
	deciding map[string]bool // the proposals being decided in this process

	// waiters are the process tool calls waiting for their proposal's
	// decision in this process (process.go).
	waiters processWaiters

	// spans are the spans of the tool calls that made pending proposals
	// (by proposal ID), kept while tracing is on so that a confirmed
	// spawn's runs are children of the call that proposed it. In memory
	// only: after a restart they parent under the decision.
	spans sync.Map
}

// spawner is what the proposals need of the runtime: a proposed spawn
// checked and estimated as it would start, and a confirmed one started.
type spawner interface {
	// estimateSpawn checks every member as a spawn would and returns the
	// total estimate.
	estimateSpawn(ctx context.Context, ps ProposedSpawn) (estimate.Estimate, error)
	// startSpawn starts a confirmed spawn in the background (under span
	// when it is valid) and returns what it started and how to cancel
	// it.
	startSpawn(ctx context.Context, ps ProposedSpawn, span trace.SpanContext) (started, func(), error)
}

// newProposals returns the proposals of m, configured from its options.
func newProposals(m *Manager) *proposals {
	timeout := m.opt.ConfirmTimeout
	if timeout <= 0 {
		timeout = DefaultConfirmTimeout
	}
	pp := &proposals{rt: m, store: m.opt.Store, hub: m.opt.Hub,
		traced: m.opt.Tracer != nil, rand: m.opt.Rand, observers: m.opt.Observers, mask: m.mask, now: m.now,
		log: m.log.With("part", "proposals")}
	pp.conf.Store(&confirmRule{policy: m.opt.Confirm, timeout: timeout})
	return pp
}

// Proposals returns the proposals awaiting a decision, oldest first:
// the session's, or every session's when session is "".
func (m *Manager) Proposals(ctx context.Context, session string) ([]Proposal, error) {
	return m.props.list(ctx, session)
}

// Proposal returns one proposal, whatever its status, or an error
// wrapping store.ErrNotFound.
func (m *Manager) Proposal(ctx context.Context, id string) (Proposal, error) {
	return m.props.get(ctx, id)
}

// Decide applies the person's decision to proposal id: Confirmed starts
// it as proposed, Modified applies c first (checked like a new spawn and
// estimated again), Rejected drops it. A confirmed proposal runs in the
// background: its result reaches the parent as a [Subagent] message. A
// spawn refused when it starts (every slot taken, budget spent) leaves
// the proposal pending, so the person may try again.
//
// It fails with an error wrapping store.ErrNotFound for an unknown ID,
// ErrDecided when the proposal is decided (or being decided by another
// call), store.ErrExpired past its expiry, and ErrBadDecision for an
// Unclear decision or a Modified one that changes nothing. Within one
// process a proposal is decided once; across processes the store's
// conditional update decides, and a loser's started runs are cancelled.
func (m *Manager) Decide(ctx context.Context, id string, d confirm.Decision, c confirm.Change) (Decided, error) {
	return m.props.decide(ctx, id, d, c)
}

// Answer decides proposal id from the person's own words (confirm.Parse).
// An answer that is not clearly a yes, a no or a change gives ErrUnclear
// and decides nothing: the person is asked again.
func (m *Manager) Answer(ctx context.Context, id, text string) (Decided, error) {
	return m.props.answer(ctx, id, text)
}

// ExpireProposals marks every proposal past its expiry as expired and
// tells each one's parent, once (the store returns each expiry to one
// caller only). It returns how many expired.
func (m *Manager) ExpireProposals(ctx context.Context) (int, error) { return m.props.expire(ctx) }

// expireLoop expires proposals until the manager closes.
func (m *Manager) expireLoop() {
	every := m.opt.ExpireEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	m.every(every, func() {
		if _, err := m.ExpireProposals(m.ctx); err != nil && m.ctx.Err() == nil {
			m.log.Error("expire spawn proposals", "err", err)
		}
	})
}

// started is what a confirmed proposal started.
type started struct {
	ids     []string
	groupID string
	runID   string
}

// startSpawn starts a confirmed proposal's spawn in the background and
// returns what it started and how to cancel it. The runs are children
// of span, the tool call that proposed them; when that is not known
// (invalid), of the decision's span (Request.TraceParent).
func (m *Manager) startSpawn(ctx context.Context, ps ProposedSpawn, span trace.SpanContext) (started, func(), error) {
	if ps.Mode == ModeSingle {
		h, err := m.Spawn(ctx, Request{Config: ps.configs()[0], Parent: ps.caller(), User: ps.User, Background: ps.Parent != "", Fork: ps.Fork,
			TraceParent: span})
		if err != nil {
			return started{}, nil, err
		}
		return started{ids: []string{h.ID()}, runID: h.UUID()}, h.Cancel, nil
	}
	g, err := m.SpawnGroup(ctx, GroupRequest{Configs: ps.configs(), Mode: ps.Mode, Parent: ps.caller(), User: ps.User,
		Background: ps.Parent != "", BudgetCents: ps.BudgetCents, Timeout: time.Duration(ps.TimeoutSeconds * float64(time.Second)), Fork: ps.Fork,
		TraceParent: span})
	if err != nil {
		return started{}, nil, err
	}
	s := started{groupID: g.ID, runID: g.ID}
	for _, h := range g.Handles() {
		s.ids = append(s.ids, h.ID())
	}
	return s, g.Cancel, nil
}

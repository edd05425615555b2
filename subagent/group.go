package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/google/uuid"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/tool"
)

// GroupRequest spawns several subagents as one group.
type GroupRequest struct {
	Configs []Config
	// Mode is ModeParallel (all at once) or ModeChain (one after another,
	// each given the previous one's result as context).
	Mode       Mode
	Parent     tool.Caller
	User       string
	Background bool
	// BudgetCents is the group's aggregate cost cap: each member's model
	// call reserves what it may cost from it first (see Group.Reserve), so
	// the members together never spend more; a member whose next call
	// cannot fit ends with cost_exceeded. Zero means only each member's
	// own cap.
	BudgetCents float64
	// Timeout is the group's combined wall-clock limit; zero means only
	// each member's own.
	Timeout time.Duration
	Fork    []llm.Message
	// TraceParent is the span the members' spans are children of (see
	// Request.TraceParent); invalid: the span in SpawnGroup's context.
	TraceParent trace.SpanContext
}

// Group is a running parallel or chain spawn.
type Group struct {
	ID     string
	Mode   Mode
	ctx    context.Context
	cancel context.CancelCauseFunc
	budget float64
	size   int // members asked for
	done   chan struct{}

	mu       sync.Mutex
	spent    float64
	reserved float64       // set aside by members' calls in flight
	freed    chan struct{} // closed and replaced when a reservation settles
	handles  []*Handle
	results  []Result
}

// MaxGroupSize bounds one group.
const MaxGroupSize = 20

// SpawnGroup starts a parallel group or a chain (its first member starts
// now, the others in turn). It returns at once; Wait for the results.
// Members that find no free slot wait for one, first come first served,
// whatever the overflow policy: a parallel group of 8 under a limit of 4
// runs 4 at once. The group's combined timeout and budget cover the wait;
// a member whose group times out while it waits ends timeout without
// having started. A parallel group is admitted or queued whole, or, when
// the queue (Options.MaxQueued) cannot hold its overflow, refused whole.
func (m *Manager) SpawnGroup(ctx context.Context, req GroupRequest) (*Group, error) {
	if n := len(req.Configs); n == 0 || n > MaxGroupSize {
		return nil, fmt.Errorf("spawn group: %d tasks, want 1 to %d", n, MaxGroupSize)
	}
	if req.Mode != ModeParallel && req.Mode != ModeChain {
		return nil, fmt.Errorf("spawn group: mode %q, want parallel or chain", req.Mode)
	}
	if req.BudgetCents < 0 || req.Timeout < 0 {
		return nil, fmt.Errorf("spawn group: budget and timeout must not be negative")
	}
	g := &Group{ID: uuid.NewString(), Mode: req.Mode, budget: req.BudgetCents, size: len(req.Configs), done: make(chan struct{}),
		freed: make(chan struct{})}
	g.ctx, g.cancel = context.WithCancelCause(m.ctx)
	if req.Timeout > 0 {
		var stop context.CancelFunc
		g.ctx, stop = context.WithTimeoutCause(g.ctx, req.Timeout, fmt.Errorf("%w: the group's combined timeout of %s", agent.ErrTimeout, req.Timeout))
		prev := g.cancel
		g.cancel = func(err error) { prev(err); stop() }
	}
	if !req.TraceParent.IsValid() {
		req.TraceParent = trace.SpanContextFromContext(ctx)
	}
	var err error
	if req.Mode == ModeParallel {
		err = m.startParallel(ctx, g, req)
	} else {
		err = m.startChain(ctx, g, req)
	}
	if err != nil {
		g.cancel(err)
		return nil, err
	}
	return g, nil
}

func (g *Group) member(req GroupRequest, cfg Config) Request {
	return Request{Config: cfg, Parent: req.Parent, User: req.User, Background: req.Background, Fork: req.Fork,
		TraceParent: req.TraceParent, mode: req.Mode, groupID: g.ID, group: g}
}

func (m *Manager) startParallel(ctx context.Context, g *Group, req GroupRequest) error {
	hs := make([]*Handle, len(req.Configs))
	for i, cfg := range req.Configs {
		h, err := m.prepare(ctx, g.member(req, cfg))
		if err != nil {
			return fmt.Errorf("task %d: %w", i+1, err)
		}
		hs[i] = h
	}
	if err := m.assignIDs(ctx, hs...); err != nil {
		return err
	}
	if m.opt.Dispatch == nil {
		if err := m.admit(true, hs...); err != nil {
			m.dropIDs(hs...)
			return err
		}
	}
	if err := m.launchMembers(ctx, hs); err != nil {
		return err
	}
	g.handles = hs
	m.wg.Go(func() {
		defer close(g.done)
		defer g.cancel(nil)
		results := make([]Result, len(hs))
		for i, h := range hs {
			<-h.Done()
			results[i], _ = h.Result()
		}
		g.mu.Lock()
		g.results = results
		g.mu.Unlock()
	})
	return nil
}

// launchMembers starts a parallel group's admitted members, or
// dispatches them (a cluster), in task order. When one cannot start, the
// members started so far end with the group's context (SpawnGroup
// cancels it) and the others never start.
func (m *Manager) launchMembers(ctx context.Context, hs []*Handle) error {
	if m.opt.Dispatch == nil {
		return m.startMembers(ctx, hs)
	}
	for i, h := range hs {
		if err := m.dispatch(ctx, h); err != nil {
			for _, rest := range hs[i+1:] {
				m.abandon(rest, true)
			}
			return fmt.Errorf("task %d: %w", i+1, err)
		}
	}
	return nil
}

// startMembers starts a parallel group's admitted members here. The
// records of the members that got a slot are written at once, each on a
// goroutine of its own, so that the store commits them together (SQLite's
// group commit: one transaction, a savepoint each) rather than one commit
// after another; the queued members' records follow, in task order (each
// tells the parent its place in the queue). As for one spawn, every
// member's record is committed before SpawnGroup returns and a member
// whose record could not be written never starts. When one could not,
// the members recorded still start (and end at once with the group's
// context, which SpawnGroup cancels, so that each record gets its end),
// the queued ones not yet recorded are dropped, and the first error is
// returned.
func (m *Manager) startMembers(ctx context.Context, hs []*Handle) error {
	errs := make([]error, len(hs))
	queued := make([]bool, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		m.register(h)
		if queued[i] = h.isQueued(); !queued[i] {
			wg.Go(func() { errs[i] = m.record(ctx, h, false) })
		}
	}
	wg.Wait()
	var failed error
	for i, h := range hs {
		if queued[i] {
			if failed != nil {
				m.abandon(h, true)
				m.opt.Hub.Forget(h.SessionKey())
				continue
			}
			errs[i] = m.record(ctx, h, true)
		}
		if errs[i] != nil {
			if failed == nil {
				failed = fmt.Errorf("task %d: %w", i+1, errs[i])
			}
			continue
		}
		m.wg.Go(h.run)
	}
	return failed
}

func (m *Manager) startChain(ctx context.Context, g *Group, req GroupRequest) error {
	first, err := m.spawn(ctx, g.member(req, req.Configs[0]))
	if err != nil {
		return fmt.Errorf("task 1: %w", err)
	}
	g.handles = []*Handle{first}
	m.wg.Go(func() {
		defer close(g.done)
		defer g.cancel(nil)
		m.runChain(g, req, first)
	})
	return nil
}

// runChain waits for each step and starts the next with the previous
// result as context; a step that does not succeed ends the chain.
func (m *Manager) runChain(g *Group, req GroupRequest, h *Handle) {
	for i := 0; ; i++ {
		<-h.Done()
		r, _ := h.Result()
		g.addResult(r)
		if r.Status != lifecycle.Success || i+1 == len(req.Configs) {
			for j := i + 1; j < len(req.Configs); j++ {
				g.addResult(Result{Status: lifecycle.Cancelled, OutputFormat: "none", Output: json.RawMessage("null"),
					Summary: fmt.Sprintf("not started: step %d ended with %s", i+1, r.Status)})
			}
			return
		}
		cfg := req.Configs[i+1]
		cfg.PreviousStep = chainResult(i+1, r)
		if next, ok := m.roleSet().roles[cfg.Role]; ok && !next.NoShare {
			cfg.PreviousFindings = m.previousFindings(g.ctx, g.ID)
		}
		next, err := m.spawn(g.ctx, g.member(req, cfg))
		if err != nil {
			g.addResult(Result{Status: lifecycle.Error, Error: err.Error(), OutputFormat: "none", Output: json.RawMessage("null"),
				Summary: fmt.Sprintf("step %d could not start", i+2)})
			for j := i + 2; j < len(req.Configs); j++ {
				g.addResult(Result{Status: lifecycle.Cancelled, OutputFormat: "none", Output: json.RawMessage("null"),
					Summary: fmt.Sprintf("not started: step %d could not start", i+2)})
			}
			return
		}
		g.mu.Lock()
		g.handles = append(g.handles, next)
		g.mu.Unlock()
		h = next
	}
}

// chainResult is the previous step's result as the next step reads it
// (Config.PreviousStep: untrusted, never in the system prompt).
func chainResult(step int, prev Result) string {
	return fmt.Sprintf("Result of the previous step (%d, subagent %s):\nSummary: %s\nOutput (%s):\n%s", step, prev.SubagentID, prev.Summary, prev.OutputFormat, outputText(prev))
}

func (g *Group) addResult(r Result) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.results = append(g.results, r)
}

// Handles returns the members started so far.
func (g *Group) Handles() []*Handle {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Handle(nil), g.handles...)
}

// Done is closed when every member has ended.
func (g *Group) Done() <-chan struct{} { return g.done }

// Wait blocks until every member has ended (or ctx is done) and returns
// their results in task order.
func (g *Group) Wait(ctx context.Context) ([]Result, error) {
	select {
	case <-g.done:
		g.mu.Lock()
		defer g.mu.Unlock()
		return append([]Result(nil), g.results...), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for group: %w", context.Cause(ctx))
	}
}

// Cancel stops every member.
func (g *Group) Cancel() {
	for _, h := range g.Handles() {
		h.Cancel()
	}
	g.cancel(agent.ErrCancelled)
}

// SpentCents is what the members have spent together.
func (g *Group) SpentCents() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spent
}

// sharedBudget is the shared budget a member's agent loop reserves from
// before each model call: the group itself when it has a budget, else nil.
func (g *Group) sharedBudget() agent.Budget {
	if g == nil || g.budget <= 0 {
		return nil
	}
	return g
}

// Reserve implements agent.Budget: a member's call sets aside what it may
// cost at most, so that the members together never spend more than the
// group's budget. A call gets all it wants when that is left. When less
// is left and other calls hold reservations, it waits for them to settle
// (they usually give most of theirs back) rather than be cut short; when
// nothing is held, it gets what is left if that is at least least, and is
// refused with agent.ErrCostExceeded otherwise. So when the budget is
// tight, members' calls go one at a time.
func (g *Group) Reserve(ctx context.Context, want, least float64) (float64, func(float64), error) {
	for {
		g.mu.Lock()
		left := g.budget - g.spent - g.reserved
		if left >= want || g.reserved <= 0 && left >= least {
			granted := min(want, left)
			g.reserved += granted
			g.mu.Unlock()
			return granted, g.settler(granted), nil
		}
		if g.reserved <= 0 {
			spent := g.spent
			g.mu.Unlock()
			return 0, nil, fmt.Errorf("%w: the group spent %.4f¢ of its %.2f¢ budget; the next call needs at least %.4f¢",
				agent.ErrCostExceeded, spent, g.budget, least)
		}
		freed := g.freed
		g.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return 0, nil, context.Cause(ctx)
		}
	}
}

// settler returns the settle function of a reservation of granted cents:
// it releases the reservation, adds what was spent and wakes the calls
// waiting for budget. Calls after the first do nothing.
func (g *Group) settler(granted float64) func(float64) {
	var once sync.Once
	return func(spent float64) {
		once.Do(func() {
			g.mu.Lock()
			g.reserved -= granted
			g.spent += spent
			close(g.freed)
			g.freed = make(chan struct{})
			g.mu.Unlock()
		})
	}
}

// remoteShare is the part of the group's budget a member that runs on
// another process may spend: the members of a parallel group cannot
// share one budget across processes, so each gets an equal share; a
// chain's next step gets what the steps before it left. 0: no budget.
func (g *Group) remoteShare() float64 {
	if g == nil || g.budget <= 0 {
		return 0
	}
	if g.Mode == ModeParallel {
		return g.budget / float64(max(g.size, 1))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	left := g.budget
	for _, r := range g.results {
		left -= r.CostCents
	}
	return max(left, 0.01)
}

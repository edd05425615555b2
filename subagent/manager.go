package subagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/tracing"
	"go.opentelemetry.io/otel/trace"

	"github.com/google/uuid"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/budget"
	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// Errors a spawn or a message can be refused with.
var (
	// ErrLimit means the limit on running subagents is reached.
	ErrLimit = errors.New("too many subagents running")
	// ErrBusy means a message was sent to a running subagent without
	// asking for it to be queued (HTTP 409).
	ErrBusy = errors.New("subagent is running")
	// ErrUnknownRole names a role that does not exist.
	ErrUnknownRole = errors.New("unknown role")
	// ErrBudget means the parent session's budget is spent.
	ErrBudget = errors.New("session budget exhausted")
	// ErrClosed means the manager is shut down.
	ErrClosed = errors.New("subagent manager is closed")
	// ErrNotRecorded is a spawn whose run could not be recorded (the
	// store is unreachable or its disk full): nothing started, and no ID
	// was given out.
	ErrNotRecorded = errors.New("the subagent could not be recorded, so it was not started")
)

// Options configure a Manager.
type Options struct {
	Catalog *llm.Catalog
	// Tools are every tool a role may name (the built-ins).
	Tools *tool.Registry
	// MCPTools returns the tools of a role's MCP servers when a turn of
	// one of its runs starts (the servers start on first use), and an
	// error naming each server that could not give its tools; the run
	// goes on without them. Nil: no MCP tools.
	MCPTools func(ctx context.Context, role role.Role) ([]tool.Tool, error)
	// Search chooses the web search of a run whose role lists
	// web_search, for its model's provider (the web_search setting):
	// Ava's own tool, the provider's, or none. Nil: Ava's own.
	Search func(provider string) Search
	Store  store.Store
	Hub    *event.Hub
	// Ledger is the live spend of the sessions' turns and runs: a run's
	// calls reserve from its parent session's budget there, beside the
	// orchestrator's turn (package budget). Nil: one over Store.
	Ledger *budget.Ledger
	// Roles are the known roles (role.LoadDirs); nil means the built-ins.
	Roles map[string]role.Role
	// MaxConcurrent limits running subagents (default 3).
	MaxConcurrent int
	// Overflow says whether a single spawn or follow-up that finds every
	// slot taken is refused (OverflowRefuse, the default) or waits
	// (OverflowQueue). Group members always wait.
	Overflow Overflow
	// MaxQueued bounds the runs waiting for a slot (default
	// DefaultMaxQueued); beyond it a spawn is refused with ErrQueueFull.
	MaxQueued int
	// StallAfter flags a subagent showing no sign of life for this long
	// (default 2 minutes; negative disables the watchdog).
	StallAfter time.Duration
	// ProgressAfter is how long a subagent runs before its parent's
	// stream gets a SubagentProgress notice (default 30 s; negative: no
	// notices); ProgressEvery is the interval of the next ones (default
	// 60 s).
	ProgressAfter, ProgressEvery time.Duration
	// WrapUpAt is the share of any limit at which a run is told to finish
	// with what it has (agent.Config.WrapUpAt); 0: never.
	WrapUpAt float64
	// AskTimeout is how long ask_user waits for the person (default
	// DefaultAskTimeout); the run's timeout is paused meanwhile.
	AskTimeout time.Duration
	Workspace  string
	Logger     *slog.Logger
	// Clock is the time source of the manager and its runs (default
	// time.Now); tests give a fixed or stepped one.
	Clock func() time.Time
	// Rand is the randomness short IDs are drawn from, three bytes a
	// draw (default crypto/rand.Reader). Tests give two managers the
	// same stream to force a clash between processes (see assignIDs).
	Rand io.Reader
	// Owner is this process's identity in the store (package instance):
	// runs are recorded as its own, and Start and a periodic sweep end
	// the runs of owners that are gone. Nil: runs have no owner and no
	// one else's runs are ever recovered.
	Owner Owner
	// RecoverEvery is how often gone owners' runs are looked for
	// (default 10 s).
	RecoverEvery time.Duration
	// ResumeAttempts is how many times a gone owner's run whose role
	// allows it (Role.Resume) is taken over and resumed from its last
	// checkpoint; a run that used them up is interrupted (quarantined).
	// 0 means DefaultResumeAttempts; negative resumes none.
	ResumeAttempts int
	// LifecycleFiles are the session files (*audit.SessionLogs): recovery
	// writes a recovered run's start entry there if its process died
	// before writing it. Nil: not checked.
	LifecycleFiles LifecycleFiles
	// Confirm is the confirmation policy of SpawnOrPropose and
	// SpawnGroupOrPropose (the spawn tools, `ava spawn`, the API); the
	// zero value never asks. Spawn and SpawnGroup never ask.
	Confirm confirm.Policy
	// ConfirmTimeout is how long a proposal waits for the person
	// (default DefaultConfirmTimeout); ExpireEvery how often expired
	// ones are looked for (default 5 s).
	ConfirmTimeout time.Duration
	ExpireEvery    time.Duration
	// ReadOnly opens the manager for looking only (ava roles): Start
	// recovers nothing, announces nothing and starts no watchdog.
	ReadOnly bool
	// Tracer records runs as OpenTelemetry spans (agent.Config.Tracer);
	// nil traces nothing.
	Tracer *tracing.Tracer
	// Redactor masks secrets in what a Handle's Result, Wait and Status
	// return (mask.go): the instance's one redactor, which the store and
	// the event hub use too. Nil masks the credential formats only.
	Redactor *redact.Redactor
	// Dispatch, when set, sends every new run to a cluster's job queue
	// (package cluster) instead of running it here: a worker's Manager
	// runs it with Execute. Nil: runs run in this process (embedded).
	Dispatch Dispatcher
	// Worker marks a cluster process that runs subagents (Execute) and
	// so also takes over the runs of gone processes; a gateway-only
	// process (false) leaves that to the workers. Ignored without
	// Dispatch.
	Worker bool
	// Observers are told of runs started and ended, follow-up turns
	// ended, proposals made and decided, questions asked and answered
	// (observers.go); nil tells no one.
	Observers *observe.Set
}

// LifecycleFiles writes the lifecycle entries of events that the session
// files do not hold yet (*audit.SessionLogs).
type LifecycleFiles interface {
	EnsureEntries(evs []event.Event) error
}

// Owner is this process's identity in the store and its view of other
// processes (*instance.Instance).
type Owner interface {
	// ID is recorded as the owner of the runs this process starts.
	ID() string
	// Gone returns which of owners are gone, each as its registration
	// was seen (store.Takeover.Seen; no heartbeat when not registered).
	Gone(ctx context.Context, owners []string) ([]store.Instance, error)
	// Hold returns nil while this process still holds the lease under
	// which it recorded runs as owner (an ID it had), an error when it
	// lost it: those runs stop before their next model or tool call. It
	// may wait while the store is unreachable, until ctx ends.
	Hold(ctx context.Context, owner string) error
}

// Manager spawns and tracks subagents. Start it before use and Close it
// to cancel every running subagent and wait for them.
type Manager struct {
	opt Options
	log *slog.Logger
	now func() time.Time

	ctx    context.Context
	cancel context.CancelCauseFunc
	// grace ends finalWriteTimeout after ctx (at Close): the store
	// writes a run waits an outage out with (ride, its leased events)
	// give up then, so a shutdown during an outage still ends.
	grace    context.Context
	endGrace context.CancelFunc
	wg       sync.WaitGroup

	// roles are the roles in force and their tools (SetRoles swaps
	// them); lims the limits on slots and the queue (SetLimits).
	roles atomic.Pointer[roleSet]
	lims  atomic.Pointer[limits]
	// asked are the open questions of ask_user (their own lock).
	asked question.Registry
	// props are the spawn proposals (their own lock; proposals.go).
	props *proposals
	// remote are the views of the runs this process dispatched to other
	// processes (their own lock; remote.go).
	remote remoteRuns

	mu      sync.Mutex
	running map[string]*Handle              // by short ID, runs holding a slot
	queue   []*Handle                       // runs waiting for a slot, first come first
	handles map[string]*Handle              // active runs (queued or holding a slot), by short ID
	idle    map[string]weak.Pointer[Handle] // finished runs still held by someone (index.go)
	ids     *idSet                          // every short ID in use in the data root
	closed  bool
	// released are the funcs told of each run that leaves the active
	// set (WatchReleases), by key.
	released map[*func(parent string)]struct{}
	// held are background results waiting for their parent's turn to
	// end (announce.go).
	held heldResults
	// deliveries are the background results on their way to their
	// parents' histories (FlushResults waits for them).
	deliveries deliveries
	// leases are the owners this process recorded runs under: its
	// instance's IDs, the current one and any it lost (a pause past the
	// lease), as string keys. A run recorded under one of them is this
	// process's to publish: it publishes the end its own write recorded,
	// and nothing of an end it did not (see ensureEnds).
	leases sync.Map
}

// heldUnder records that this process recorded a run under owner.
func (m *Manager) heldUnder(owner string) {
	if owner != "" && owner != store.OwnerQueue {
		m.leases.Store(owner, struct{}{})
	}
}

// ownLease reports whether this process ever recorded a run under owner.
func (m *Manager) ownLease(owner string) bool {
	if owner == "" {
		return false
	}
	_, ok := m.leases.Load(owner)
	return ok || owner == m.ownerID()
}

// NewManager returns a manager; call Start before spawning.
func NewManager(opt Options) *Manager {
	if opt.MaxConcurrent <= 0 {
		opt.MaxConcurrent = 3
	}
	if opt.ProgressAfter == 0 {
		opt.ProgressAfter = 30 * time.Second
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = time.Minute
	}
	if opt.StallAfter == 0 {
		opt.StallAfter = 2 * time.Minute
	}
	if opt.Overflow == "" {
		opt.Overflow = OverflowRefuse
	}
	if opt.MaxQueued <= 0 {
		opt.MaxQueued = DefaultMaxQueued
	}
	if opt.RecoverEvery <= 0 {
		opt.RecoverEvery = 10 * time.Second
	}
	if opt.ResumeAttempts == 0 {
		opt.ResumeAttempts = DefaultResumeAttempts
	}
	if opt.Ledger == nil {
		opt.Ledger = budget.NewLedger(opt.Store)
	}
	if opt.Roles == nil {
		opt.Roles = map[string]role.Role{}
		for _, r := range role.Builtin() {
			opt.Roles[r.Name] = r
		}
	}
	m := &Manager{opt: opt, log: opt.Logger, now: opt.Clock, running: map[string]*Handle{}, handles: map[string]*Handle{},
		idle: map[string]weak.Pointer[Handle]{}, ids: newIDSet(opt.Rand)}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.log = m.log.With("component", "subagent")
	m.roles.Store(m.newRoleSet(opt.Roles))
	m.lims.Store(&limits{maxConcurrent: opt.MaxConcurrent, maxQueued: opt.MaxQueued, overflow: opt.Overflow})
	m.props = newProposals(m)
	m.ctx, m.cancel = context.WithCancelCause(context.Background())
	m.grace, m.endGrace = context.WithCancel(context.Background())
	context.AfterFunc(m.ctx, func() { time.AfterFunc(finalWriteTimeout, m.endGrace) })
	return m
}

// Start, unless read-only, ends the runs of processes that are gone as
// interrupted (see Recover), delivers results that were never announced,
// and starts the watchdog and the periodic recovery.
func (m *Manager) Start(ctx context.Context) error {
	if m.opt.Overflow != OverflowRefuse && m.opt.Overflow != OverflowQueue {
		return fmt.Errorf("start subagent manager: overflow policy %q: use %s or %s", m.opt.Overflow, OverflowRefuse, OverflowQueue)
	}
	if m.opt.ReadOnly {
		return nil
	}
	if err := m.Recover(ctx); err != nil {
		return err
	}
	if m.opt.StallAfter > 0 {
		m.wg.Go(m.watchdog)
	}
	if m.opt.ProgressAfter > 0 {
		m.wg.Go(m.progressLoop)
	}
	if m.opt.Owner != nil {
		m.wg.Go(m.recoverLoop)
	}
	m.wg.Go(m.expireLoop)
	return nil
}

// Close cancels every running subagent and waits for them to record how
// they ended.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	// The cause is also ErrCancelled, so the loops stop as cancelled;
	// finish records them as interrupted (see Handle.finish).
	m.cancel(fmt.Errorf("%w: shutting down: %w", ErrClosed, agent.ErrCancelled))
	m.dropRemote()
	m.wg.Wait()
	m.endGrace()
	return nil
}

// Roles returns the known roles.
func (m *Manager) Roles() map[string]role.Role { return m.roleSet().roles }

// Queued is how many runs wait for a slot.
func (m *Manager) Queued() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue)
}

// Request is one spawn.
type Request struct {
	Config Config
	// Parent is the calling agent.
	Parent tool.Caller
	// User is the human the work is for, when known.
	User string
	// Background marks a run whose result is announced into the parent's
	// history when it ends (rather than returned to a waiting caller).
	Background bool
	// Fork is the parent's conversation, for context_mode fork.
	Fork []llm.Message
	// TraceParent is the span the run's invoke_agent span is a child of:
	// the spawning tool call's, captured when the spawn is made, so that
	// a run that starts later (queued, or in the background) still has
	// it. Invalid: the span in the spawn's context, if any.
	TraceParent trace.SpanContext
	// Idempotency, when set, is the spawn request's idempotency key: the
	// run's record (or its proposal's) is written with it, in one
	// transaction, and a key recorded already fails the spawn with
	// store.ErrKeyUsed and starts nothing.
	Idempotency *store.Idempotency

	mode    Mode
	groupID string
	group   *Group
	// admitted marks a dispatched run a worker starts: its cost cap was
	// drawn from the session's budget when it was spawned and is in its
	// configuration, so it is not drawn again.
	admitted bool
	// restored marks a finished run rebuilt from its record to be looked
	// at: its model is not loaded until a follow-up calls it.
	restored bool
	// resumed marks a run claimed or taken over by this process, rebuilt
	// from its record: the store reads that rebuild it wait out an
	// outage (ride) instead of ending it.
	resumed bool
}

// Spawn starts a subagent and returns its handle at once. When every
// slot is taken it is refused with ErrLimit, or with the queue policy
// (Options.Overflow) it is queued: its status is queued, with its
// position, until a slot frees.
func (m *Manager) Spawn(ctx context.Context, req Request) (*Handle, error) {
	req.mode = ModeSingle
	return m.spawn(ctx, req)
}

// spawn admits one run; a group member may always wait for a slot.
func (m *Manager) spawn(ctx context.Context, req Request) (*Handle, error) {
	h, err := m.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := m.assignIDs(ctx, h); err != nil {
		return nil, err
	}
	if m.opt.Dispatch != nil {
		if err := m.dispatch(ctx, h); err != nil {
			return nil, err
		}
		return h, nil
	}
	if err := m.admit(req.group != nil || m.limits().overflow == OverflowQueue, h); err != nil {
		m.dropIDs(h)
		return nil, err
	}
	if err := m.start(ctx, h); err != nil {
		return nil, err
	}
	return h, nil
}

// start opens an admitted handle's stream and starts its run. The run's
// record (queued, or running) is written first, so a spawn that returns
// an ID has its run in the store; one that cannot be recorded returns
// ErrNotRecorded and starts nothing.
func (m *Manager) start(ctx context.Context, h *Handle) error {
	m.register(h)
	if err := m.record(ctx, h, h.isQueued()); err != nil {
		return err
	}
	m.wg.Go(h.run)
	return nil
}

// record writes a registered handle's new run record, queued or
// running, under the spawn's context: a spawn whose caller gave up (its
// request's deadline, a client gone) records nothing later. One that
// cannot be written is abandoned (its slot or place
// freed, its stream forgotten) and ErrNotRecorded is returned. A clash
// with another process's new run (ErrDuplicate) is not an error here:
// it is the run's to report (its turn finds the ID foreign and tells
// the parent).
func (m *Manager) record(ctx context.Context, h *Handle, queued bool) error {
	var err error
	if queued {
		err = h.recordQueued(ctx, true)
	} else {
		err = h.recordRun(ctx, true, m.now())
	}
	if err != nil && !errors.Is(err, store.ErrDuplicate) {
		m.abandon(h, true)
		m.opt.Hub.Forget(h.SessionKey())
		if errors.Is(err, store.ErrKeyUsed) {
			return fmt.Errorf("spawn: %w", err)
		}
		return fmt.Errorf("spawn: %w: %w", ErrNotRecorded, err)
	}
	return nil
}

// plan is a checked spawn request: its role, model, tools and limits.
type plan struct {
	role     role.Role
	model    llm.Model
	tools    []string
	reg      *tool.Registry
	limits   agent.Limits
	thinking bool
}

// plan checks a request and resolves what it would run with, without
// starting anything (a proposal is estimated from it).
func (m *Manager) plan(ctx context.Context, req Request) (plan, error) {
	if req.Parent.Subagent {
		return plan{}, fmt.Errorf("spawn: %w: subagents cannot spawn subagents", tool.ErrForbidden)
	}
	if err := req.Config.Validate(); err != nil {
		return plan{}, fmt.Errorf("spawn: %w", err)
	}
	roles := m.roleSet()
	role, ok := roles.roles[req.Config.Role]
	if !ok {
		return plan{}, fmt.Errorf("spawn: %w %q (known: %s)", ErrUnknownRole, req.Config.Role, strings.Join(m.roleNames(), ", "))
	}
	model, err := m.model(ctx, req, role)
	if err != nil {
		return plan{}, fmt.Errorf("spawn %s: %w", role.Name, err)
	}
	rt := roles.tools[role.Name]
	if rt.err != nil {
		return plan{}, fmt.Errorf("spawn %s: %w", role.Name, rt.err)
	}
	limits := req.Config.limits(role)
	if !req.admitted {
		if err := m.applyBudget(ctx, req.Parent.SessionKey, req.resumed, &limits); err != nil {
			return plan{}, err
		}
	}
	thinking := role.ExtendedThinking
	if req.Config.ExtendedThinking != nil {
		thinking = *req.Config.ExtendedThinking
	}
	search := m.SearchFor(role, model)
	reg, err := searchTools(rt.tools, search)
	if err != nil {
		return plan{}, fmt.Errorf("spawn %s: %w", role.Name, err)
	}
	names := reg.Names()
	if search.Server != nil {
		names = append(names, fmt.Sprintf("web_search (%s, up to %d a call)", search.Via, search.Server.MaxUses))
	}
	return plan{role: role, model: model, tools: names, reg: reg, limits: limits, thinking: thinking}, nil
}

// model resolves the request's model (the role's when it names none) as
// its namer may name it, and, unless the run is only being restored for
// a look, checks that it can be loaded, so that a run that could never
// call its model is refused (or, resumed, ended) with the reason.
func (m *Manager) model(ctx context.Context, req Request, role role.Role) (llm.Model, error) {
	name, by := req.Config.Model, req.Config.ModelBy
	if name == "" {
		name, by = role.Model, role.ModelBy
	}
	model, err := m.opt.Catalog.ResolveAs(name, by)
	if err != nil {
		return llm.Model{}, err
	}
	if req.restored {
		return model, nil
	}
	return model, llm.CheckModel(ctx, model)
}

// prepare checks a request and builds its handle.
func (m *Manager) prepare(ctx context.Context, req Request) (*Handle, error) {
	if !req.TraceParent.IsValid() {
		req.TraceParent = trace.SpanContextFromContext(ctx)
	}
	p, err := m.plan(ctx, req)
	if err != nil {
		return nil, err
	}
	return newHandle(m, req, p.role, p.model, p.reg, p.limits, p.thinking), nil
}

func (m *Manager) roleNames() []string {
	var names []string
	for n := range m.roleSet().roles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// roleToolSet is a role's tools, or why they could not be had.
type roleToolSet struct {
	tools *tool.Registry
	err   error
}

// buildRoleTools returns the role's tools minus those no subagent may
// have, with ask (the manager's ask_user) when the role lists it.
func buildRoleTools(all *tool.Registry, r role.Role, ask tool.Tool) (*tool.Registry, error) {
	var names []string
	asks := false
	for _, n := range r.Tools {
		switch {
		case n == AskUserTool:
			asks = true
		case role.WithheldReason(n) == "":
			names = append(names, n)
		}
	}
	reg, err := all.Subset(names)
	if err != nil || !asks {
		return reg, err
	}
	return reg.With(ask)
}

// applyBudget draws the cost cap from what is left of the parent
// session's budget, if it has one: its cap minus what its turns and
// subagents spent (stored, or live in this process: the ledger) and what
// their calls in flight reserved. The run's calls then reserve from the
// same ledger (Handle.turn), so this cap is only an upper bound. In a
// cluster, the session's runs on other processes are not in this
// process's ledger: what each may still spend of its cap counts as
// committed.
func (m *Manager) applyBudget(ctx context.Context, session string, resumed bool, l *agent.Limits) error {
	if session == "" {
		return nil
	}
	var st budget.Standing
	read := func(ctx context.Context) (err error) {
		st, err = m.opt.Ledger.Standing(ctx, session)
		return err
	}
	var err error
	if resumed { // the run is this process's already: wait for the store
		err = m.ride(read)
	} else {
		err = read(ctx)
	}
	if err != nil {
		return fmt.Errorf("spawn: %w", err)
	}
	if !st.Limited {
		return nil
	}
	left := st.Left()
	if m.opt.Dispatch != nil {
		reserved, err := m.clusterReservedCents(ctx, session)
		if err != nil {
			return fmt.Errorf("spawn: %w", err)
		}
		left -= reserved
	}
	if left <= 0 {
		return fmt.Errorf("spawn: %w: %s of %s spent or committed by the session's turns and subagents", ErrBudget, money.Cents(st.Budget-left), money.Cents(st.Budget))
	}
	if l.MaxCostCents == 0 || l.MaxCostCents > left {
		l.MaxCostCents = left
	}
	return nil
}

// release frees h's slot (or its place in the queue), gives it to the
// run waiting longest, retires h from the active index (index.go) and
// tells whoever watches the parent session.
func (m *Manager) release(h *Handle) {
	m.mu.Lock()
	if m.running[h.id] == h {
		delete(m.running, h.id)
	}
	if i := slices.Index(m.queue, h); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
	}
	m.retire(h)
	m.admitWaiting()
	var fns []func(string)
	for fn := range m.released {
		fns = append(fns, *fn)
	}
	m.mu.Unlock()
	if h.req.Parent.SessionKey == "" {
		return
	}
	for _, fn := range fns {
		fn(h.req.Parent.SessionKey)
	}
}

// register gives the run its full ID; its event stream (the hub's,
// under its session key) exists from now on. The drawn ID is already
// known to be free in this process and the store (assignIDs), so the
// stream starts fresh; the run record itself is written when its
// loop starts, beside the loop's setup and before its first model call
// (Handle.recordRun).
func (m *Manager) register(h *Handle) {
	h.uuid = uuid.NewString()
	m.opt.Hub.Fresh(h.SessionKey())
}

// lookupTimeout bounds the store read of a Get that misses memory.
const lookupTimeout = 10 * time.Second

// Get returns a run's handle by short ID, UUID or unique prefix: the one
// in memory while the run is active or someone holds it, else rebuilt
// from the store (a finished run, also of an earlier process). An active
// run of another process gives an error wrapping ErrBusy.
func (m *Manager) Get(id string) (*Handle, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	return m.lookup(ctx, id)
}

// List returns the handles in memory, newest first: this process's
// active (queued or running) runs, and with all also finished ones some
// caller still holds. Finished runs leave memory; Runs lists them from the
// store.
func (m *Manager) List(all bool) []*Handle {
	m.mu.Lock()
	var out []*Handle
	for _, h := range m.handles {
		out = append(out, h)
	}
	if all {
		for k, wp := range m.idle {
			if _, active := m.handles[k]; !active {
				if h := wp.Value(); h != nil {
					out = append(out, h)
				}
			}
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Handle) int { return b.created.Compare(a.created) })
	return out
}

// Counts is how many runs this process runs (running or being set up)
// and how many wait in its queue for a slot; views of runs that another
// process of a cluster runs are not counted.
func (m *Manager) Counts() (running, queued int) {
	for _, h := range m.List(false) {
		h.mu.Lock()
		status, remote := h.status, h.remote
		h.mu.Unlock()
		switch {
		case remote:
		case status == lifecycle.Queued:
			queued++
		case !status.Final():
			running++
		}
	}
	return running, queued
}

// Cancel stops a running subagent.
func (m *Manager) Cancel(id string) (*Handle, error) {
	h, err := m.Get(id)
	if err != nil {
		return nil, err
	}
	h.Cancel()
	return h, nil
}

// CancelSession stops every active (running or queued) subagent spawned
// from a session (a
// new message superseding the request that started them, or a stop). It
// returns how many it stopped.
func (m *Manager) CancelSession(session string) int {
	hs := m.RunningFor(session)
	for _, h := range hs {
		h.Cancel()
	}
	return len(hs)
}

// WatchReleases calls fn, synchronously and before the run's Done
// channel closes, with the parent session of each run that leaves this
// process's active set (RunningFor): its slot or queue place is freed,
// after its end was recorded here or, for a run another process of a
// cluster ran, read from the store. It is the runtime's internal path
// for state that must be exact when a run is done (the session
// service's idle/waiting_for_subagents); fn must be quick and not call
// back into the run. Hooks use Options.Observers instead. Any number
// may watch; the returned func stops fn.
func (m *Manager) WatchReleases(fn func(parent string)) (stop func()) {
	key := &fn
	m.mu.Lock()
	if m.released == nil {
		m.released = map[*func(string)]struct{}{}
	}
	m.released[key] = struct{}{}
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.released, key)
		m.mu.Unlock()
	}
}

// RunningFor returns the handles of the active subagents spawned from a
// session: running, and queued (they will run).
func (m *Manager) RunningFor(session string) []*Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hs []*Handle
	for _, h := range m.handles {
		if h.req.Parent.SessionKey == session {
			hs = append(hs, h)
		}
	}
	return hs
}

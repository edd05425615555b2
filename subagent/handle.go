package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// Handle is a spawned subagent: query it, wait for it, cancel it, read
// or subscribe to its events, send it follow-ups. All methods are safe
// for concurrent use.
type Handle struct {
	m        *Manager
	req      Request
	role     role.Role
	model    llm.Model
	tools    *tool.Registry
	limits   agent.Limits
	thinking bool
	created  time.Time

	id   string // S-xxxxxx
	uuid string

	drainMu sync.Mutex
	drain   *event.Subscription // Events' cursor, opened on first use

	mu         sync.Mutex
	status     lifecycle.Status
	stored     lifecycle.Status // the status last written to the store
	owner      string           // the lease (instance ID) this process holds the run under: every write to its record carries it
	lost       bool             // the store refused a write: another process owns the run now
	fencedOut  bool             // the store refused one of its writes (fenced): its turn is stopped
	spawning   chan struct{}    // closed once its SubagentSpawn is stored or refused (nil: none published)
	current    *agent.Agent
	cancel     context.CancelCauseFunc
	cancelled  bool
	stalled    bool
	result     *Result
	messages   []llm.Message // the conversation so far
	queue      []string      // follow-ups waiting for the current run
	steers     []string      // messages for the running turn's next model call
	waiting    bool          // ask_user waits for the person
	waits      []Wait        // every ask_user wait of the run, the open one last
	done       chan struct{} // closed when the current run (and queue) ends
	spawned    chan struct{} // closed once SubagentSpawn is in the parent's stream, or the run ended without one
	spawnOnce  sync.Once
	slot       chan struct{}     // closed when a queued run gets its slot
	queuedAt   time.Time         // when the run last joined the queue
	turns      int               // runs started, including follow-ups
	starting   bool              // the running turn is the run's start here (observers.go): its end is the run's end
	startedAt  time.Time         // when the running (or last) turn started
	firstStart time.Time         // when the run first started
	endedAt    time.Time         // when its last turn ended (zero while one runs)
	total      counters          // what its ended turns used (figures.go); its record holds it
	progressAt time.Time         // when the parent was last told how the run goes
	restored   bool              // rebuilt from the store; its conversation is not loaded yet
	foreign    bool              // its ID turned out to be another process's run: nothing of it is recorded
	firstSpan  trace.SpanContext // the first turn's invoke_agent span, which follow-ups link to
	sendSpan   trace.SpanContext // the span of the latest follow-up's sender, the next turn's parent

	// Resume and checkpoints (resume.go).
	attempt     int           // times the run was resumed after its process stopped
	base        counters      // what the running turn used before it was resumed
	inputStored bool          // the next turn's input is the last stored message
	ckStored    int           // messages of the turn's conversation stored so far
	ckDone      chan struct{} // closed when the background checkpoint ends (nil: none)
	ckErr       error         // the background checkpoint's error

	watched bool // a cleanup drops its weak index entry (guarded by m.mu)

	// remote marks the view of a run that runs in another process of a
	// cluster (dispatch.go): its status is read from the store, Cancel
	// reaches its worker, and its end comes from RemoteEnded.
	remote bool
}

// isRemote reports whether the run runs in another process.
func (h *Handle) isRemote() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.remote
}

func newHandle(m *Manager, req Request, role role.Role, model llm.Model, tools *tool.Registry, limits agent.Limits, thinking bool) *Handle {
	return &Handle{m: m, req: req, role: role, model: model, tools: tools, limits: limits, thinking: thinking,
		created: m.now(), status: lifecycle.Pending, stored: lifecycle.Pending, done: make(chan struct{}),
		spawned: make(chan struct{})}
}

// Spawned is closed once the run's SubagentSpawn is in its parent's
// stream, or once the run ended without one (it never left the queue).
// A background spawn tool waits for it, so that the parent's turn shows
// its spawns before it ends.
func (h *Handle) Spawned() <-chan struct{} {
	if h.spawned == nil { // restored from the store: long since spawned
		return closedChan
	}
	return h.spawned
}

// markSpawned closes spawned, once.
func (h *Handle) markSpawned() {
	if h.spawned != nil {
		h.spawnOnce.Do(func() { close(h.spawned) })
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// ID is the short ID, S-xxxxxx.
func (h *Handle) ID() string { return h.id }

// UUID is the run's full ID.
func (h *Handle) UUID() string { return h.uuid }

// SessionKey is the subagent's own session, ava:subagent:S-xxxxxx.
func (h *Handle) SessionKey() string { return store.SubagentSessionPrefix + h.id }

// Role is the subagent's role.
func (h *Handle) Role() role.Role { return h.role }

// Config is the spawn request's configuration.
func (h *Handle) Config() Config { return h.req.Config }

// Mode is how the subagent was started.
func (h *Handle) Mode() Mode { return h.req.mode }

// Parent is the session that spawned it.
func (h *Handle) Parent() string { return h.req.Parent.SessionKey }

// Model is the subagent's model.
func (h *Handle) Model() llm.Model { return h.model }

// Limits are the subagent's limits.
func (h *Handle) Limits() agent.Limits { return h.limits }

// RunStatus is a non-blocking view of a subagent (seed 000 section 1.1).
type RunStatus struct {
	ID      string           `json:"id"`
	Role    string           `json:"role"`
	Task    string           `json:"task"`
	Model   string           `json:"model"`
	Mode    Mode             `json:"mode"`
	Parent  string           `json:"parent,omitempty"`
	GroupID string           `json:"group_id,omitempty"`
	Status  lifecycle.Status `json:"status"`
	Stalled bool             `json:"stalled,omitempty"`
	// WaitingForUser is set while the run waits for the person's answer
	// (ask_user): shown as waiting_for_user, never stalled.
	WaitingForUser bool `json:"waiting_for_user,omitempty"`
	// Iteration, Tokens and CostCents are the run's model calls, tokens
	// and cost over all its turns, the running one's so far included
	// (figures.go).
	Iteration int     `json:"iteration"`
	Tokens    int     `json:"tokens"`
	CostCents float64 `json:"cost_cents"`
	// Elapsed is the run's active time: the time it spent running,
	// summed over all its turns, without the idle time between turns or
	// the time it waited in the queue. It is the figure every surface
	// shows as elapsed or duration.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Wall is the run's wall time: from its first start to its last end,
	// or to now while it is active (what a timeline bar spans).
	Wall       time.Duration `json:"wall_ns"`
	Activity   string        `json:"activity,omitempty"`
	LastTool   string        `json:"last_tool,omitempty"`
	LastToolAt time.Time     `json:"last_tool_at,omitzero"`
	// StartedAt is the run's first start, EndedAt its last end (zero
	// while it is active).
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// QueuePosition is a queued run's place in the queue, 1 for the next
	// to start; 0 when it does not wait.
	QueuePosition int `json:"queue_position,omitempty"`
	// QueuedAt is when a queued run joined the queue.
	QueuedAt time.Time `json:"queued_at,omitzero"`
	// CreatedAt is when the run was spawned. It, Attempts, Error, Result
	// and Live are set by Manager.Runs and Manager.Run.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// Attempts counts the times another process resumed the run after
	// its own stopped.
	Attempts int `json:"attempts,omitempty"`
	// Error is its last turn's error, Result its last turn's result
	// (JSON), once it ended.
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	// Live is set when this process holds the run's handle (it runs it,
	// or holds it since it ended).
	Live bool `json:"live,omitempty"`
	// Waits are the times it waited for the person (ask_user), the open
	// one (no AnsweredAt) last: what a timeline marks on its bar.
	Waits []Wait `json:"waits,omitempty"`
}

// Status returns the live status without blocking on the run, with its
// task and activity masked (see mask.go).
func (h *Handle) Status() RunStatus {
	return h.liveStatus().Masked(h.m.opt.Redactor)
}

// liveStatus is Status unmasked.
func (h *Handle) liveStatus() RunStatus {
	h.mu.Lock()
	st := RunStatus{ID: h.id, Role: h.role.Name, Task: h.req.Config.Task, Model: h.model.Name(), Mode: h.req.mode,
		Parent: h.req.Parent.SessionKey, GroupID: h.req.groupID, Status: h.status, Stalled: h.stalled, WaitingForUser: h.waiting,
		Waits: slices.Clone(h.waits)}
	a := h.current
	f := figures{used: h.total, first: h.firstStart, end: h.endedAt}
	if h.status == lifecycle.Running {
		f.used, f.turnStart = f.used.plus(h.base), h.startedAt
	}
	if h.status == lifecycle.Queued {
		st.QueuedAt = h.queuedAt
	}
	h.mu.Unlock()
	if a != nil && f.end.IsZero() {
		s := a.Snapshot()
		f.used = f.used.plus(counters{tokens: s.Tokens, cost: s.CostCents, iterations: s.Iteration})
		st.Activity, st.LastTool, st.LastToolAt = s.Activity, s.LastTool, s.LastToolAt
	}
	if h.isRemote() && !st.Status.Final() {
		return h.m.remoteStatus(h, st)
	}
	if st.Status == lifecycle.Queued {
		st.QueuePosition = h.m.queuePosition(h)
	}
	if st.Status.Final() {
		st.Activity = ""
	}
	f.set(&st, h.m.now())
	return st
}

func (h *Handle) agentSnapshot() agent.Snapshot {
	h.mu.Lock()
	a := h.current
	h.mu.Unlock()
	if a == nil {
		return agent.Snapshot{}
	}
	return a.Snapshot()
}

// Done is closed when the subagent's current run (and its queued
// follow-ups) ends.
func (h *Handle) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.done
}

// Result returns the last run's result, if it ended, with its secrets
// masked (see mask.go): every surface reads results here.
func (h *Handle) Result() (Result, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.result == nil || !h.status.Final() {
		return Result{}, false
	}
	return h.result.Masked(h.m.opt.Redactor), true
}

// Wait blocks until the current run ends or ctx is done.
func (h *Handle) Wait(ctx context.Context) (Result, error) {
	select {
	case <-h.Done():
		r, _ := h.Result()
		return r, nil
	case <-ctx.Done():
		return Result{}, fmt.Errorf("wait for %s: %w", h.id, context.Cause(ctx))
	}
}

// Cancel stops the subagent: its model stream and its tools' processes
// are stopped, queued follow-ups are dropped, and its result does not
// reach the parent. A queued run leaves the queue and ends cancelled
// without calling the model. Cancelling a finished subagent does nothing.
func (h *Handle) Cancel() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status.Final() {
		return
	}
	if h.remote {
		go h.m.remoteCancel(h)
		return
	}
	h.cancelled = true
	h.queue = nil
	if h.cancel != nil {
		h.cancel(agent.ErrCancelled)
	}
}

// Events drains the events published since the last call (seed 000
// section 1.2): each kept event is returned once across calls, read from
// the store when it is no longer in memory.
func (h *Handle) Events(ctx context.Context) ([]event.Event, error) {
	h.drainMu.Lock()
	defer h.drainMu.Unlock()
	if h.drain == nil {
		h.drain = h.Subscribe(0)
	}
	return h.drain.Poll(ctx)
}

// Subscribe returns a subscription to the subagent's events after
// sequence number after (0: from its first), replayed from the store,
// then live. Any number may subscribe; none can stall the subagent.
func (h *Handle) Subscribe(after uint64) *event.Subscription {
	return h.m.opt.Hub.Subscribe(h.SessionKey(), after)
}

// storeRun is the run's record as it is created: running since start,
// or queued (start nil).
func (h *Handle) storeRun(status lifecycle.Status, start *time.Time, owner string) store.Run {
	cfg := storedConfig(h.req.Config, !h.req.Background)
	return store.Run{ID: h.uuid, ShortID: h.id, SessionKey: h.SessionKey(), ParentSession: h.req.Parent.SessionKey,
		ParentAgent: h.req.Parent.AgentID, GroupID: h.req.groupID, Mode: string(h.req.mode), Role: h.role.Name,
		Task: h.req.Config.Task, Model: h.model.Name(), Config: cfg, Status: status,
		CreatedAt: h.created, StartedAt: start, Owner: owner, Idempotency: h.req.Idempotency}
}

// claim returns the owner this process writes the run's record as when
// it moves it from status from: the lease it holds the run under, or,
// for a run it records afresh or moves back from a final status (a
// follow-up), its current lease, which the write records.
func (h *Handle) claim(from lifecycle.Status) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if from == lifecycle.Pending || from.Final() {
		return h.m.ownerID()
	}
	return h.owner
}

// held records that the run's record was written as owner's.
func (h *Handle) held(owner string, status lifecycle.Status) {
	h.mu.Lock()
	h.owner, h.stored = owner, status
	h.mu.Unlock()
	h.m.heldUnder(owner)
}

// writer is the owner the run's next write carries.
func (h *Handle) writer() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.owner
}

// fencedPublisher is a run's event publisher: the hub, with each event
// fenced by the lease this process holds the run under (see lease), and
// refusing the run's events at once when this process knows it lost that
// lease (another process owns the run, and its stream, now). A refusal
// by the store, noticed or not, stops the run (see fenced).
type fencedPublisher struct{ h *Handle }

// errLeaseLost refuses an event of a run whose lease this process lost.
var errLeaseLost = fmt.Errorf("%w: its lease was lost; its events are not recorded", agent.ErrNotOwner)

// stale reports whether this process lost the lease the run is held
// under (its instance registered again under a new ID).
func (h *Handle) stale() bool {
	if h.m.opt.Owner == nil {
		return false
	}
	owner := h.writer()
	return owner != "" && owner != store.OwnerQueue && owner != h.m.ownerID()
}

// Publish implements event.Publisher.
func (p fencedPublisher) Publish(ev event.Event) (event.Event, error) {
	if p.h.stale() {
		return ev, errLeaseLost
	}
	ev.Fence = p.h.lease()
	ev, err := p.h.m.opt.Hub.Publish(ev)
	return ev, p.h.fenced(err)
}

// PublishAsync implements event.AsyncPublisher.
func (p fencedPublisher) PublishAsync(ev event.Event, done func(event.Event, error)) {
	if p.h.stale() {
		if done != nil {
			done(ev, errLeaseLost)
		}
		return
	}
	ev.Fence = p.h.lease()
	p.h.m.opt.Hub.PublishAsync(ev, func(ev event.Event, err error) {
		err = p.h.fenced(err)
		if done != nil {
			done(ev, err)
		}
	})
}

// lease is the fence of the run's events while it is active: stored
// only while the owner this process holds the run under owns it and it
// is active, checked by the store in the write itself (event.Fence). A
// process without instances (no owners recorded) fences nothing.
func (h *Handle) lease() event.Fence {
	owner := h.writer()
	if owner == "" {
		return event.Fence{}
	}
	return event.Fence{Run: h.uuid, Owner: owner, Until: h.m.grace.Done()}
}

// lostWrite reports whether err is the store refusing a write of the
// run's for good: its lease is another's (another process took the run
// over, or this one lost its lease), or the run has ended (another
// process ended it on finding this one gone).
func lostWrite(err error) bool {
	return errors.Is(err, event.ErrFenced) || errors.Is(err, store.ErrStaleOwner) || errors.Is(err, store.ErrInvalidTransition)
}

// fenced turns the store's refusal of one of the run's writes (an
// event, a checkpoint) into the run's stop: the running turn is
// cancelled at once with agent.ErrNotOwner (interrupted), whether this
// process noticed that it lost the run or not, so that it makes no
// further model or tool call, and its end, refused in turn, publishes
// nothing (see lose). Other errors are returned as they are.
func (h *Handle) fenced(err error) error {
	if err == nil || !lostWrite(err) {
		return err
	}
	err = fmt.Errorf("%w: %w", agent.ErrNotOwner, err)
	h.mu.Lock()
	cancel, first := h.cancel, !h.fencedOut
	h.fencedOut = true
	h.mu.Unlock()
	if first {
		h.m.log.Warn("the store refused a write of a subagent this process no longer holds; stopping it, publishing nothing of it",
			"id", h.id, "err", err)
	}
	if cancel != nil {
		cancel(err)
	}
	return err
}

// hold is the run's agent.Config.Hold: a fresh check, before each model
// call and each step's tools, that this process still holds the lease it
// runs the run under.
func (h *Handle) hold(ctx context.Context) error {
	if h.m.opt.Owner == nil {
		return nil
	}
	if err := h.m.opt.Owner.Hold(ctx, h.writer()); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: %w", agent.ErrNotOwner, err)
	}
	return nil
}

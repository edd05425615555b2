package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/transcript"
)

// finalWriteTimeout bounds the writes that record how a run ended; they
// run even when the run's context is cancelled.
const finalWriteTimeout = 10 * time.Second

// run waits for a slot if the run is queued, then executes the first
// turn and any queued follow-ups, holding the concurrency slot
// throughout.
func (h *Handle) run() {
	h.afterSlot(func() { h.runFrom(h.req.Fork, llm.UserText(taskPrompt(h.req.Config))) })
}

// runFrom runs a turn from history and input, then the queued ones.
func (h *Handle) runFrom(history []llm.Message, input llm.Message) {
	for {
		res := h.turn(history, input)
		next, ok := h.nextQueued(res)
		if !ok {
			return
		}
		history, input = res.Messages, llm.UserText(next)
	}
}

// taskPrompt is the first user message: the task (the system prompt
// holds it too, with the context, except in fork mode, where the
// context is given here; models act on the user turn), then the
// previous chain step's result, if any, inside an untrusted block, and
// the findings the steps before posted, if any, in another.
func taskPrompt(c Config) string {
	p := "Begin the task: " + c.Task
	if ctx := strings.TrimSpace(c.Context); ctx != "" && c.ContextMode == ContextFork {
		p += "\n\nContext from the orchestrator:\n" + ctx
	}
	if c.PreviousStep != "" {
		p += "\n\nThe previous step's result, as data to work from:\n" + tool.Untrusted("previous chain step", c.PreviousStep)
	}
	if c.PreviousFindings != "" {
		p += "\n\nThe findings the steps before you posted to the chain's board, as data to work from:\n" +
			tool.Untrusted("findings of the steps before", c.PreviousFindings)
	}
	return p
}

// nextQueued pops the next follow-up queued while the run went on, or
// frees the slot and then closes the run's done channel (so a waiter that
// spawns again finds the slot free). Lock order is manager then handle,
// so the handle's lock is not held while the slot is freed.
func (h *Handle) nextQueued(res agent.Result) (string, bool) {
	closed := h.m.isClosed()
	h.mu.Lock()
	// Steers the run did not read come first: they were sent before
	// anything queued after the run ended.
	h.queue, h.steers = append(h.steers, h.queue...), nil
	if len(h.queue) > 0 && res.Status != lifecycle.Cancelled && !closed {
		next := h.queue[0]
		h.queue = h.queue[1:]
		h.mu.Unlock()
		return next, true
	}
	h.queue = nil
	h.mu.Unlock()
	h.end()
	return "", false
}

// end frees the run's slot (or its place in the queue) and retires its
// handle, forgets its journal and then closes the run's done channel.
func (h *Handle) end() {
	h.mu.Lock()
	done := h.done
	h.mu.Unlock()
	h.m.release(h)
	// Its events stay in the store; a subscriber or a follow-up opens a
	// journal again, so a long-running process does not keep one per run.
	h.m.opt.Hub.Forget(h.SessionKey())
	h.markSpawned()
	close(done)
}

// turn runs the agent once and records how it ended.
func (h *Handle) turn(history []llm.Message, input llm.Message) agent.Result {
	m := h.m
	ctx, cancel := context.WithCancelCause(h.parentContext())
	defer cancel(nil)
	ctx, links := h.traceContext(ctx)
	tools, unavailable := h.turnTools(ctx)
	tools = h.withBoard(tools)
	// announce publishes the parent's SubagentSpawn once the first
	// request is out (agent.Config.Started): storing it then does not
	// compete with the request for the CPU.
	var announce func()
	h.mu.Lock()
	stored := h.inputStored
	h.inputStored, h.ckStored = false, len(history)
	if stored {
		h.ckStored++
	}
	h.mu.Unlock()
	if !stored {
		input = answerPending(history, input)
	}
	share, shareErr := h.sessionShare()
	if share != nil {
		// Deferred calls run after finish, which stores the turn's spend.
		defer share.Leave()
	}
	a := agent.New(agent.Config{
		Model:          h.model,
		System:         SystemPrompt(h.role, h.req.Config, tools) + unavailableNote(unavailable),
		Tools:          tools,
		ServerTools:    m.SearchFor(h.role, h.model).Server,
		Limits:         h.limits,
		ThinkingBudget: thinkingBudget(h.thinking),
		Caller: tool.Caller{AgentID: h.id, SessionKey: h.SessionKey(), Subagent: true, Workspace: m.opt.Workspace, User: h.req.User,
			ProcessNetwork: h.role.Network, WorkspaceReadOnly: h.role.ReadOnlyWorkspace},
		User:        h.req.User,
		ParentAgent: h.req.Parent.AgentID,
		Budget:      budgets(h.req.group.sharedBudget(), share),
		WrapUpAt:    m.opt.WrapUpAt,
		Inbox:       h.takeSteers,
		Unread:      h.returnSteers,
		CheckAnswer: h.checkAnswer,
		Checkpoint:  h.checkpoint,
		Hold:        h.hold,
		Publisher:   fencedPublisher{h},
		Clock:       m.now,
		Logger:      m.log.With("subagent", h.id),
		Tracer:      m.opt.Tracer,
		AgentName:   h.role.Name,
		TraceLinks:  links,
		Started: func() {
			if announce != nil {
				announce()
			}
		},
	})
	start := m.now()
	h.mu.Lock()
	takenOver := h.stored == lifecycle.Running // resumed from a gone process (recordRun)
	h.mu.Unlock()
	first := h.begin(a, cancel, start)
	h.mu.Lock()
	h.starting = first || takenOver
	h.mu.Unlock()
	// The parent hears of the spawn as soon as the first request is out
	// (or the run ended without one): SubagentSpawn is stored (and its
	// synced lifecycle entry written, by the session files' sink) while
	// the model answers, always before the run's SubagentComplete in the
	// same session. The run record is written before the loop starts, so
	// no model call is ever made by an unrecorded run (a failed write
	// cancels the run before its first call). The loop's own events are
	// likewise stored once its first request is on its way (agent:
	// asynchronous publishing, Config.Started).
	err := h.recordRun(context.Background(), first, start)
	if err == nil && shareErr != nil {
		// Never run beside the session's budget unseen either.
		err = shareErr
	}
	if err != nil {
		// Never run unrecorded: the turn ends before its loop starts,
		// and the parent is told.
		if first {
			h.announceSpawn(start, false)
		}
		return h.finish(agent.Result{Status: lifecycle.Error, Err: err}, len(history), start)
	}
	switch {
	case first:
		announce = func() { h.announceSpawn(start, false) }
	case !takenOver: // a follow-up turn: its own start (seed 002)
		announce = func() { h.announceSpawn(start, true) }
	}
	if first || takenOver {
		h.noticeStart(start, h.attempt > 0)
	}
	h.startTrace()
	if unavailable != nil {
		h.publishOwn(event.New(event.Error, event.ErrorContent{Error: unavailable.Error()}))
	}
	res := a.Run(ctx, history, input)
	if first && res.SpanContext.IsValid() {
		h.mu.Lock()
		h.firstSpan = res.SpanContext
		h.mu.Unlock()
	}
	return h.finish(res, len(history), start)
}

// traceContext puts the parent of the turn's span in ctx: for the first
// turn the span that spawned the run (Request.TraceParent, captured at
// spawn time, so a background or queued run started later still has
// it); for a follow-up the span of whoever sent it, if any, with a link
// to the run's first span.
func (h *Handle) traceContext(ctx context.Context) (context.Context, []trace.Link) {
	if h.m.opt.Tracer == nil {
		return ctx, nil
	}
	h.mu.Lock()
	followUp, first, sender := h.turns > 0, h.firstSpan, h.sendSpan
	h.sendSpan = trace.SpanContext{}
	h.mu.Unlock()
	parent := h.req.TraceParent
	var links []trace.Link
	if followUp {
		parent = sender
		if first.IsValid() {
			links = []trace.Link{{SpanContext: first}}
		}
	}
	if parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, parent)
	}
	return ctx, links
}

// takeSteers returns the messages steered into the run since the last
// model call (agent.Config.Inbox).
func (h *Handle) takeSteers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.steers
	h.steers = nil
	return s
}

// returnSteers puts back, first, steers a failed model call never
// delivered (agent.Config.Unread): the turn's end makes them a
// follow-up.
func (h *Handle) returnSteers(steers []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steers = append(slices.Clone(steers), h.steers...)
}

// checkAnswer vets the final answer against the role's required output
// fields (agent.Config.CheckAnswer; the agent refuses an empty one).
func (h *Handle) checkAnswer(text string) error {
	return checkRequired(text, h.role.RequiredOutput)
}

// parentContext is the group's context for a group member, else the
// manager's.
func (h *Handle) parentContext() context.Context {
	if h.req.group != nil {
		return h.req.group.ctx
	}
	return h.m.ctx
}

func thinkingBudget(on bool) int {
	if on {
		return 4096
	}
	return 0
}

// begin marks the handle running. It reports whether this is the run's
// first turn. A Cancel that came before begin cancels at once.
func (h *Handle) begin(a *agent.Agent, cancel context.CancelCauseFunc, start time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.current, h.cancel, h.status, h.stalled, h.fencedOut = a, cancel, lifecycle.Running, false, false
	h.startedAt, h.endedAt = start, time.Time{}
	if h.firstStart.IsZero() {
		h.firstStart = start
	}
	h.turns++
	if h.cancelled {
		cancel(agent.ErrCancelled)
	}
	return h.turns == 1
}

// startedFirst sets the run's first start, unless it has one.
func (h *Handle) startedFirst(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.firstStart.IsZero() {
		h.firstStart = at
	}
}

// recordRun records the run as running: its first turn creates the
// record (a queued run's exists and moves from queued), a follow-up
// moves it back to running. The write happens even if
// the run was already cancelled, so that its end can be recorded from
// running. A run that cannot be recorded gets the error and its turn
// ends before its loop starts: it never runs unrecorded.
func (h *Handle) recordRun(ctx context.Context, first bool, start time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, finalWriteTimeout)
	defer cancel()
	h.mu.Lock()
	from := h.stored
	h.mu.Unlock()
	var err error
	if from == lifecycle.Running {
		// A run taken over from a gone process (resume.go): its record
		// is running and this process's already.
		return nil
	}
	owner := h.claim(from)
	if first && from != lifecycle.Queued { // a queued run's record exists
		err = h.m.opt.Store.CreateRun(ctx, h.storeRun(lifecycle.Running, &start, owner))
		if errors.Is(err, store.ErrDuplicate) {
			// Another process recorded a run under this ID after it was
			// checked: the ID and its stream are that run's.
			h.mu.Lock()
			h.foreign = true
			h.mu.Unlock()
		}
	} else {
		// The record exists (a queued run, a follow-up): the write waits
		// out an outage rather than end the turn before it started.
		err = h.m.ride(func(ctx context.Context) error {
			return h.m.opt.Store.TransitionRun(ctx, h.uuid, owner, []lifecycle.Status{from}, lifecycle.Running, nil)
		})
	}
	if err != nil {
		h.m.log.Error("record subagent start; not running it", "id", h.id, "err", err)
		return fmt.Errorf("record run %s: %w", h.id, err)
	}
	h.held(owner, lifecycle.Running)
	if first && from != lifecycle.Queued {
		h.startedFirst(start) // the record's StartedAt: the spawn writes it before the turn begins
	}
	return nil
}

// announceSpawn publishes SubagentSpawn (at start) in the parent's
// session without waiting for it: it is stored, its lifecycle entry
// written and the handle marked spawned while the run starts, and it
// comes before the run's SubagentComplete, published to the same session
// later.
//
// It is fenced by the run's lease like the run's own events: a process
// that lost the run before its start was stored writes no start (the
// process that took it over writes it, see ensureStarts). The run's end
// waits for it (see waitSpawn), so that a run that ends at once never
// has its end recorded before its start is stored.
func (h *Handle) announceSpawn(start time.Time, followUp bool) {
	sp := h.spawnEvent(event.SubagentSpawn, 0)
	if followUp {
		var c event.SubagentSpawnContent
		_ = sp.Decode(&c)
		c.FollowUp = true
		sp = event.New(event.SubagentSpawn, c)
	}
	ev := h.parentEvent(sp)
	if ev.Session == "" {
		h.markSpawned()
		return
	}
	ev.Time, ev.Fence = start, h.lease()
	stored := make(chan struct{})
	h.mu.Lock()
	h.spawning = stored
	h.mu.Unlock()
	h.m.opt.Hub.PublishAsync(ev, func(_ event.Event, err error) {
		if err = h.fenced(err); err != nil {
			h.m.log.Error("publish to parent session", "id", h.id, "type", ev.Type, "err", err)
		}
		close(stored)
		h.markSpawned()
	})
}

// startTrace publishes SessionStart at the head of the turn in the run's
// own session, so that its trace begins with it and each turn (a
// follow-up's too) is bracketed by SessionStart and SessionEnd like an
// orchestrator turn's (seed 002). It goes out without waiting, ahead of
// the loop's own events (the hub keeps a session's asynchronous events
// in order), fenced by the run's lease.
func (h *Handle) startTrace() {
	ev := event.New(event.SessionStart, event.SessionContent{Model: h.model.Name(), Instance: h.writer()})
	h.ownEvent(&ev)
	ev.Fence = h.lease()
	h.m.opt.Hub.PublishAsync(ev, func(_ event.Event, err error) {
		if err = h.fenced(err); err != nil {
			h.m.log.Error("publish to own session", "id", h.id, "type", ev.Type, "err", err)
		}
	})
}

// waitSpawn waits until the run's SubagentSpawn, if it was published, is
// stored or refused: a run's end is recorded after its start.
func (h *Handle) waitSpawn() {
	h.mu.Lock()
	stored := h.spawning
	h.mu.Unlock()
	if stored != nil {
		<-stored
	}
}

// spawnEvent is the run's SubagentSpawn or SubagentQueued event.
func (h *Handle) spawnEvent(t event.Type, position int) event.Event {
	return event.New(t, event.SubagentSpawnContent{SubagentID: h.id, Role: h.role.Name,
		Task: h.req.Config.Task, Model: h.model.Name(), Mode: string(h.req.mode), QueuePosition: position})
}

// finish records a turn's end: result, store, events, lifecycle entry,
// announcement. It runs even when the run was cancelled.
func (h *Handle) finish(res agent.Result, prior int, start time.Time) agent.Result {
	m := h.m
	ctx, cancel := context.WithTimeout(context.Background(), finalWriteTimeout)
	defer cancel()
	if errors.Is(res.Err, ErrClosed) {
		res.Status = lifecycle.Interrupted
	}
	_ = h.waitCheckpoint() // logged by the writer; its messages are recorded below
	h.waitSpawn()
	res = h.resumedFinish(res)
	if res.Status == lifecycle.Interrupted && !errors.Is(res.Err, agent.ErrNotOwner) && h.suspend(ctx, res) {
		return res
	}
	end, queued := m.now(), h.isQueued()
	active := end.Sub(start)
	if queued { // it never left the queue: its wait is not active time
		active = 0
	}
	h.mu.Lock()
	stored, turn := h.ckStored, turnCounters(res, active)
	run := h.total.plus(turn)
	h.mu.Unlock()
	result := h.buildResult(res, prior, run)
	if queued {
		result.Output, result.OutputFormat = json.RawMessage("null"), "none"
		result.Summary = fmt.Sprintf("%s (%s)", queuedSummary, res.Status)
	}
	raw, _ := json.Marshal(result)
	fin := &store.RunFinish{Result: raw, Tokens: run.tokens, CostCents: run.cost, Iterations: run.iterations, Active: run.active,
		EndedAt: end, SpendSession: h.req.Parent.SessionKey, Spend: store.Spend{Model: h.model.Name(),
			Usage: event.Usage{Tokens: turn.tokens, CostCents: turn.cost, CachedTokens: res.Usage.CacheReadTokens}},
		Delivered: h.deliveredOnFinish(res.Status), Messages: h.conversation(res.Messages, stored)}
	if res.Err != nil && res.Status != lifecycle.Success {
		fin.Error = res.Err.Error()
	}
	h.mu.Lock()
	from, foreign := h.stored, h.foreign
	// The turn that started the run (or none: it ended in the queue)
	// ends the run; any other is a follow-up.
	runEnd := h.starting || h.turns == 0
	h.starting = false
	h.mu.Unlock()
	if foreign {
		// Nothing of this run is in the store or in the ID's stream,
		// which belong to another process's run; only its parent hears.
		h.mu.Lock()
		h.status, h.result, h.stalled = res.Status, &result, false
		h.ended(run, end)
		h.mu.Unlock()
		h.publishParent(h.completeEvent(result, res, start))
		return res
	}
	if h.delivers(res.Status) {
		// From the end's record on, the run may be seen finished: its
		// parent's next turn waits for the result (FlushResults).
		defer m.deliveries.begin(h.req.Parent.SessionKey)()
	}
	if err := h.recordEnd(from, res.Status, fin, h.endEvents(res)); err != nil {
		if h.lose(ctx, err) {
			return res
		}
		// Not recorded (the manager closed while the store could not
		// take it): nothing of the end is published. The run stays
		// active under this process's lease, and the next process's
		// recovery ends or resumes it and publishes that.
		m.log.Error("record subagent end; publishing nothing of it", "id", h.id, "status", res.Status, "err", err)
		h.mu.Lock()
		h.status, h.result, h.stalled = res.Status, &result, false
		h.ended(run, end)
		h.mu.Unlock()
		return res
	}
	h.noticeEnd(runEnd, res.Status, fin)
	h.mu.Lock()
	h.status, h.stored, h.result, h.stalled = res.Status, res.Status, &result, false
	h.ended(run, end)
	if len(res.Messages) > 0 {
		h.messages = res.Messages
	}
	h.mu.Unlock()
	h.publishParent(h.completeEvent(result, res, start))
	h.deliver(ctx, result)
	return res
}

// turnCounters are what a turn used: the loop's result (with what the
// turn used before it was resumed, see resumedFinish) and its active
// time.
func turnCounters(res agent.Result, active time.Duration) counters {
	return counters{tokens: res.Usage.Total(), cost: res.CostCents, iterations: res.Iterations, active: active}
}

// ended records, under h.mu, that a turn ended at end with the run's
// figures at run: what its live status reads from then on.
func (h *Handle) ended(run counters, end time.Time) {
	h.total, h.base, h.endedAt = run, counters{}, end
}

// recordEnd writes the run's end with evs, the last events of its own
// stream (see endEvents), in one write (storeEnd), and keeps trying
// while the store cannot take it (a database restarting, a full disk):
// the run's end is recorded once, before anything of it is published,
// however long the outage. It gives up only finalWriteTimeout after the
// manager closed; the run then stays active under this process's lease,
// and the next process's recovery ends or resumes it. A refusal (another
// owner, an end already recorded) is returned at once.
func (h *Handle) recordEnd(from, to lifecycle.Status, fin *store.RunFinish, evs []event.Event) error {
	attempts := 0
	err := h.m.ride(func(ctx context.Context) error {
		attempts++
		err := h.storeEnd(ctx, from, to, fin, evs)
		if err != nil && !refused(err) && attempts == 1 {
			h.m.log.Warn("subagent's end not recorded yet; retrying until the store takes it", "id", h.id, "status", to, "err", err)
		}
		return err
	})
	if err == nil && attempts > 1 {
		h.m.log.Info("subagent's end recorded after the store came back", "id", h.id, "status", to, "attempts", attempts)
	}
	return err
}

// storeEnd records the run's end (TransitionRun with fin) and evs, its
// own stream's last events, in one transaction (event.Hub.PublishWith,
// store.RunFinish.Events): the stream says the run ended exactly when
// its record does, and an end the store refuses leaves no trace in it.
func (h *Handle) storeEnd(ctx context.Context, from, to lifecycle.Status, fin *store.RunFinish, evs []event.Event) error {
	write := func(ctx context.Context, numbered []event.Event) error {
		f := *fin
		f.Events = numbered
		return h.m.opt.Store.TransitionRun(ctx, h.uuid, h.writer(), []lifecycle.Status{from}, to, &f)
	}
	stored, err := h.m.opt.Hub.PublishWith(ctx, evs, write)
	if stored == nil {
		return err
	}
	if err != nil { // recorded; a sink (the trace file) failed
		h.m.log.Error("publish the end of a subagent's own stream", "id", h.id, "err", err)
	}
	return nil
}

// refused reports whether a run write was refused for good: the run is
// another owner's, or not in the status the write expects.
func refused(err error) bool {
	return errors.Is(err, store.ErrStaleOwner) || errors.Is(err, store.ErrInvalidTransition) || errors.Is(err, store.ErrNotFound) ||
		errors.Is(err, store.ErrClosed) || errors.Is(err, event.ErrFenced)
}

// durableContext is the context of a write that must outlive an outage:
// it ends finalWriteTimeout after the manager closes, not before.
func (m *Manager) durableContext() (context.Context, context.CancelFunc) {
	return context.WithCancel(m.grace)
}

// lose handles a refused end write: when the store says the run is no
// longer this process's (another process took it over, or ended it when
// it found this one gone), nothing of this turn's end is published or
// announced — the run's owner does that — and the handle shows the
// stored record. It reports whether the refusal was that.
func (h *Handle) lose(ctx context.Context, err error) bool {
	if !errors.Is(err, store.ErrStaleOwner) && !errors.Is(err, store.ErrInvalidTransition) {
		return false
	}
	h.m.log.Warn("subagent's end not recorded: another process owns the run now; this process stops it and publishes nothing of its end",
		"id", h.id, "err", err)
	status, result := lifecycle.Interrupted, &Result{SubagentID: h.id, Status: lifecycle.Interrupted,
		Output: json.RawMessage("null"), OutputFormat: "none", Summary: "continued by another process", Error: err.Error()}
	if run, gerr := h.m.opt.Store.GetRun(ctx, h.uuid); gerr == nil && run.Status.Final() {
		status = run.Status
		if r, rerr := h.m.restoreResult(run); rerr == nil && r != nil {
			result = r
		}
	}
	h.mu.Lock()
	h.status, h.stored, h.result, h.stalled, h.lost = status, status, result, false, true
	h.mu.Unlock()
	return true
}

// conversation is the turn's messages not stored by a checkpoint, for
// the subagent's own session, recorded with the run's end so that it can
// be resumed after a restart.
func (h *Handle) conversation(msgs []llm.Message, prior int) []store.Message {
	if len(msgs) <= prior {
		return nil
	}
	out, err := transcript.ToStore(h.SessionKey(), h.id, msgs[prior:])
	if err != nil {
		h.m.log.Error("encode subagent conversation", "id", h.id, "err", err)
		return nil
	}
	return out
}

// buildResult turns the loop's result into the subagent's result, with
// the run's figures over all its turns, run. A turn that a limit or a
// stop ended keeps what it had found in Partial (the messages after
// prior are the turn's own).
func (h *Handle) buildResult(res agent.Result, prior int, run counters) Result {
	r := Result{SubagentID: h.id, Status: res.Status, TokensUsed: run.tokens, CostCents: run.cost,
		DurationSeconds: run.active.Seconds(), Iterations: run.iterations, Waits: h.waitsSoFar()}
	if res.Err != nil && res.Status != lifecycle.Success {
		r.Error = res.Err.Error()
	}
	if prior <= len(res.Messages) {
		r.Citations = citationsOf(res.Messages[prior:])
	}
	if res.Status != lifecycle.Success && res.Status != lifecycle.Error && prior <= len(res.Messages) {
		r.Partial = partialOf(res.Text, res.Messages[prior:])
	}
	if res.Status == lifecycle.Cancelled || res.Status == lifecycle.Interrupted {
		r.Output, r.OutputFormat, r.Summary = json.RawMessage("null"), "none", "stopped before finishing"
		return r
	}
	r.Output, r.Summary, r.Confidence, r.OutputFormat = parseAnswer(res.Text)
	if res.Status != lifecycle.Success && r.Summary == "" {
		r.Summary = fmt.Sprintf("ended with %s before a final answer", res.Status)
	}
	return r
}

// completeEvent is the parent's SubagentComplete for a turn that started
// at start: what its lifecycle entry and its readers need.
func (h *Handle) completeEvent(r Result, res agent.Result, start time.Time) event.Event {
	return completeEvent(h.role.Name, string(h.req.mode), h.model.Name(), r, res, start, h.attempt)
}

// completeEvent is a run's SubagentComplete; attempt is how often it was
// resumed (0: never). Its tokens, cost, duration (active time) and
// iterations are the run's over all its turns, as in r; its token split
// and its meta are the turn's (res).
func completeEvent(role, mode, model string, r Result, res agent.Result, start time.Time, attempt int) event.Event {
	ev := event.New(event.SubagentComplete, event.SubagentCompleteContent{SubagentID: r.SubagentID, Role: role, Status: r.Status, Attempt: attempt,
		Summary: r.Summary, Tokens: r.TokensUsed, CostCents: r.CostCents, DurationMs: r.Active().Milliseconds(),
		Iterations: r.Iterations, StartedAt: start, Model: model, Mode: mode,
		InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CacheReadTokens: res.Usage.CacheReadTokens,
		CacheWriteTokens: res.Usage.CacheWriteTokens, Output: r.Output, OutputFormat: r.OutputFormat,
		WebSearches: res.Usage.WebSearches, Citations: eventCitations(r.Citations)})
	ev.Meta = event.Meta{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CostCents: res.CostCents,
		DurationMs: res.Duration.Milliseconds()}
	return ev
}

// endEvents are the events that end the turn in the subagent's own
// stream (see endEvents), addressed and stamped, for its end's write.
// The loop already published the Error event of StatusError.
func (h *Handle) endEvents(res agent.Result) []event.Event {
	msg := ""
	if res.Status != lifecycle.Error {
		msg = string(res.Status)
		if res.Err != nil {
			msg = fmt.Sprintf("%s: %v", res.Status, res.Err)
		}
	}
	meta := event.Meta{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CostCents: res.CostCents,
		ModelID: h.model.Name(), DurationMs: res.Duration.Milliseconds()}
	evs := endEvents(res.Status, msg, h.model.Name(), meta)
	for i := range evs {
		h.ownEvent(&evs[i])
	}
	return evs
}

// endEvents are the last events of a subagent's own stream, so that its
// trace says how it ended: an Error event (when errMsg is set) for every
// ending but success, then SessionEnd with the status and meta.
func endEvents(status lifecycle.Status, errMsg, model string, meta event.Meta) []event.Event {
	var evs []event.Event
	if status != lifecycle.Success && errMsg != "" {
		evs = append(evs, event.New(event.Error, event.ErrorContent{Error: errMsg, Fatal: true}))
	}
	end := event.New(event.SessionEnd, event.SessionContent{Status: status, Model: model})
	end.Meta = meta
	return append(evs, end)
}

// ownEvent addresses ev to the subagent's own session, as the subagent,
// now.
func (h *Handle) ownEvent(ev *event.Event) {
	ev.Session, ev.Agent, ev.User, ev.Time = h.SessionKey(), h.id, h.req.User, h.m.now()
	ev.Meta.ParentAgentID = h.req.Parent.AgentID
}

// publishOwn publishes ev in the subagent's own session as the subagent,
// while it runs: fenced by its lease (a refusal stops the run).
func (h *Handle) publishOwn(ev event.Event) {
	h.ownEvent(&ev)
	ev.Fence = h.lease()
	if _, err := h.m.opt.Hub.Publish(ev); h.fenced(err) != nil {
		h.m.log.Error("publish to own session", "id", h.id, "type", ev.Type, "err", err)
	}
}

// publishParent publishes ev in the parent's session as the parent
// agent: the run's SubagentComplete, once its end is recorded by this
// process's own write (see finish), so never fenced by its lease (the
// run has ended).
func (h *Handle) publishParent(ev event.Event) {
	ev = h.parentEvent(ev)
	if ev.Session == "" {
		return
	}
	if _, err := h.m.opt.Hub.Publish(ev); err != nil {
		h.m.log.Error("publish to parent session", "id", h.id, "type", ev.Type, "err", err)
	}
}

// publishParentLeased is publishParent for an event of the running run
// (a question to the person): fenced by its lease, like its own events.
func (h *Handle) publishParentLeased(ev event.Event) {
	ev = h.parentEvent(ev)
	if ev.Session == "" {
		return
	}
	ev.Fence = h.lease()
	if _, err := h.m.opt.Hub.Publish(ev); h.fenced(err) != nil {
		h.m.log.Error("publish to parent session", "id", h.id, "type", ev.Type, "err", err)
	}
}

// parentEvent addresses ev to the parent's session (none when the run
// has no parent session).
func (h *Handle) parentEvent(ev event.Event) event.Event {
	if h.req.Parent.SessionKey == "" {
		return ev
	}
	ev.Session, ev.Agent, ev.User, ev.Time = h.req.Parent.SessionKey, h.req.Parent.AgentID, h.req.User, h.m.now()
	if ev.Agent == "" {
		ev.Agent = event.OrchestratorID
	}
	return ev
}

// Package session owns Ava's sessions: it is the one place that runs a
// turn for a session key, whichever channel the message came from (the
// command line now; HTTP, chat, Telegram and MCP use the same entry
// points).
//
// For a main session key (anything without ":subagent:") the Service runs
// orchestrator turns one at a time. A message that arrives while a turn
// runs is the person's answer when the turn waits for it (a process
// proposal, answer.go); otherwise it is refused with ErrBusy, queued
// (SendOptions.Queue, run in order
// when the turn ends), or supersedes it (SendOptions.Supersede: the
// running turn is cancelled and, if Config.CancelSubagentsOnStop, so are
// the subagents it started; then the new message runs). Stop cancels the
// running turn, its queue and (by the same setting) its subagents.
//
// A subagent key (ava:subagent:S-xxxxxx) goes to the subagent manager's
// follow-up path: a finished subagent resumes with its conversation; a
// running one queues the message or refuses it.
//
// A main session's state is idle, running (a turn runs) or
// waiting_for_subagents (no turn runs but subagents it started do). Every
// change is published in the session's stream as a SessionState event.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// State is a main session's state.
type State string

// States.
const (
	Idle                State = "idle"
	Running             State = "running"
	WaitingForSubagents State = "waiting_for_subagents"
)

// Errors a message can be refused with.
var (
	// ErrBusy means a turn runs and the caller asked neither to queue nor
	// to supersede (HTTP 409).
	ErrBusy = errors.New("session is busy")
	// ErrClosed means the service is shut down.
	ErrClosed = errors.New("session service is closed")
	// ErrSuperseded is the cause a superseded turn is cancelled with.
	ErrSuperseded = fmt.Errorf("superseded by a new message: %w", agent.ErrCancelled)
	// ErrMerged is the cause a turn is cancelled with when the person's
	// next message, sent within the merge window, is answered with it.
	ErrMerged = fmt.Errorf("merged with the next message: %w (%w)", agent.ErrCancelled, orchestrator.ErrDiscarded)
	// ErrStopped is the cause a stopped turn is cancelled with.
	ErrStopped = fmt.Errorf("stopped: %w", agent.ErrCancelled)
)

// Limits bound one turn (agent.Limits).
type Limits = agent.Limits

// Result is a finished turn, as `ava run --json` prints it.
type Result = orchestrator.ResultJSON

// Config is what the Service needs.
type Config struct {
	Hub       *event.Hub
	Subagents *subagent.Manager
	// Orchestrator builds the orchestrator for a turn on the named model
	// ("" for the configured one) with the given limits; the second
	// result is the resolved model.
	Orchestrator func(model string, limits Limits) (*orchestrator.Orchestrator, llm.Model, error)
	// Offline reports whether a model is the offline scripted one.
	Offline func(llm.Model) bool
	// Budgets sets a session's budget (store.Store has it).
	Budgets interface {
		SetSessionBudget(ctx context.Context, key string, cents float64) error
	}
	// Store holds the main sessions (store.Store has it): a message to
	// one it does not hold creates it, when the key is one a new
	// session may have (CheckNewKey). nil: a key no turn holds must
	// pass CheckNewKey, and nothing is created before the turn stores.
	Store interface {
		GetSession(ctx context.Context, key string) (store.Session, error)
		EnsureSession(ctx context.Context, key string) (store.Session, error)
		GetIdempotency(ctx context.Context, scope, key string) (store.Idempotency, error)
	}
	// MergeWindow is how soon after a turn starts a person's next message
	// is merged into it (SendOptions.Merge); 0: never.
	MergeWindow time.Duration
	// OrchestratorAnswers has the orchestrator answer the subagents'
	// questions (ask_user) for the person (AVA_ASK_ANSWERS=orchestrator);
	// the person may still answer first. It hears of them through
	// Observers, which must then be the subagent manager's.
	OrchestratorAnswers bool
	// Observers are told of each main session turn's end (TurnEnded); the
	// subagent manager tells them of its own notices. Nil: no one.
	Observers *observe.Set
	// CancelSubagentsOnStop makes Stop and a superseding message also
	// cancel the subagents the session started.
	CancelSubagentsOnStop bool
	// Reports keeps which sessions are owed a report of their background
	// results and lets one process claim each (store.ReportStore has
	// it); nil: no report is ever made (as config.Quiet).
	Reports store.ReportStore
	// OnComplete is what a session does when its background subagents
	// have ended (config.OnComplete); "" is config.Summarize.
	OnComplete config.OnComplete
	// ReportAfter is how long a result must have waited unreported
	// before a recovery sweep (ReportOwed) reports it (default 10 s):
	// the process that announced it reports it at once, and a sweep
	// elsewhere must not race it.
	ReportAfter time.Duration
	// Redactor masks secrets in what Turn.Wait returns (the instance's
	// one redactor, as in the store and the event hub); nil masks the
	// credential formats only.
	Redactor *redact.Redactor
	Logger   *slog.Logger
}

// SendOptions say how to deliver one message.
type SendOptions struct {
	// User is the human who sent it, when known.
	User string
	// Queue waits for the running turn instead of refusing with ErrBusy.
	Queue bool
	// Supersede cancels the running turn and runs this message next.
	Supersede bool
	// Merge marks a message the person typed on a chat channel: when it
	// arrives within Config.MergeWindow of the running turn's start (a
	// turn started by such a message too), that turn is cancelled (with
	// its subagents, by CancelSubagentsOnStop) and the two messages are
	// answered as one (seed 003). Otherwise Queue and Supersede apply.
	Merge bool
	// Steer delivers a message to a running subagent into its
	// conversation before its next model call, without cancelling
	// anything (subagent.Manager.Steer); a finished one gets it as a
	// follow-up. Only for subagent keys.
	Steer bool
	// Model overrides the orchestrator's model for this turn.
	Model string
	// Limits bound the turn.
	Limits Limits
	// Budget, when positive, sets the session's budget first (cents).
	Budget float64
	// IdempotencyKey, when set, sends a main session's message once:
	// the key is recorded with the message when its turn stores it, and
	// SendOnce answers a repeat with the first message's turn (see
	// idempotency.go). Send itself refuses a key a turn kept here holds.
	IdempotencyKey string
	// From is the session's last event number as the sender read it
	// before sending (ava.Runtime.Chat): the turn's events follow it,
	// and so does a repeat's stream (Turn.From).
	From uint64
}

// Service owns the sessions. Close it to cancel every turn and wait.
type Service struct {
	cfg Config
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*main
	// lastOpts are the model and limits the sessions' last turns here
	// asked for, for their report turns.
	lastOpts map[string]SendOptions
	// reporting counts the report claims under way by session, and
	// reports holds each session's last report turn, for WaitReport.
	reporting map[string]int
	reports   map[string]*Turn
	// keyed are the turns of messages sent with an idempotency key, by
	// key, while they wait or run and for a while after (idempotency.go).
	keyed  map[string]*keyed
	closed bool
	// unwatch stops what New started watching: the manager's releases
	// and the observer of questions.
	unwatch []func()
}

// main is one main session's turn and queue.
type main struct {
	current *Turn
	queue   []*Turn
	state   State
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.OnComplete == "" {
		cfg.OnComplete = config.Summarize
	}
	if cfg.ReportAfter <= 0 {
		cfg.ReportAfter = defaultReportAfter
	}
	s := &Service{cfg: cfg, log: cfg.Logger, sessions: map[string]*main{}, lastOpts: map[string]SendOptions{},
		reporting: map[string]int{}, reports: map[string]*Turn{}, keyed: map[string]*keyed{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "session")
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	if cfg.Subagents != nil {
		// Synchronous: the state is settled before the run's Done closes
		// (also for a run another process of a cluster ran, which no
		// observer here hears of).
		s.unwatch = append(s.unwatch, cfg.Subagents.WatchReleases(s.subagentFinished))
		cfg.Subagents.HoldResults(s.turnBusy)
		if cfg.OrchestratorAnswers {
			if cfg.Observers == nil {
				s.log.Warn("the orchestrator cannot answer subagents' questions: the session service has no observers")
			}
			s.unwatch = append(s.unwatch, cfg.Observers.Add(observe.Observer{QuestionAsked: s.questionAsked}))
		}
	}
	return s
}

// Turn is one message being answered.
type Turn struct {
	// Session is the session key.
	Session string
	message string
	opt     SendOptions
	// key is the message's idempotency key (SendOptions.IdempotencyKey)
	// as the store records it with the message; nil without one.
	key *store.Idempotency

	done    chan struct{}
	cancel  context.CancelCauseFunc // set when it starts
	started time.Time               // when it started
	merged  bool                    // it carries a superseded turn's message too
	// prev is the turn whose message this one answers too (merged).
	prev *Turn
	// storedText is what of the message this turn stored in the history
	// (orchestrator.AskMessage), "" if nothing.
	storedText string
	queued     bool  // it waits for the running turn to end
	cause      error // why it was cancelled, if it was
	res        Result
	err        error
	model      llm.Model
	// redactor masks the result Wait returns (Config.Redactor).
	redactor *redact.Redactor
	// span is the sender's span (an HTTP caller's trace): the turn's
	// spans continue it.
	span trace.SpanContext
	// report: a turn Ava started by itself to report the session's
	// background results (report.go); it has no message.
	report bool
	// fresh: the session's first turn, started as its message created
	// the session. A session that did not exist has no history, no
	// proposal waiting and no unended turn to read (messages and
	// proposals belong to its row), so the turn does not read them.
	// Another process sending the first message to the same key at the
	// same moment is as unordered as any two processes' turns of one
	// session.
	fresh bool
}

// Merged reports whether the turn's message was merged into the next
// one (it was cancelled for that; the next turn answers both).
// Read it once the turn is done.
func (t *Turn) Merged() bool { return errors.Is(t.cause, ErrMerged) }

// MergesPrevious reports whether the turn answers the message of the
// turn it cancelled too (sent within the merge window).
func (t *Turn) MergesPrevious() bool { return t.merged }

// Queued reports whether the message waited, when sent, for a running
// turn to end (queued, not merged or superseding).
func (t *Turn) Queued() bool { return t.queued }

// Done is closed when the turn has ended.
func (t *Turn) Done() <-chan struct{} { return t.done }

// Wait returns the turn's result once it ends, or ctx's error. The
// result's text and error are masked (orchestrator.ResultJSON.Masked):
// every surface that shows a turn's answer (the chat API's done event,
// `ava run --json`, the chat channels) reads it here.
func (t *Turn) Wait(ctx context.Context) (Result, error) {
	select {
	case <-t.done:
		return t.res.Masked(t.redactor), t.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Send delivers a message to a session: a turn of a main session, or a
// follow-up to a subagent. It returns at once; Wait on the turn.
//
// A main session that does not exist yet is created by its first
// message when its key is one a client may choose (CheckNewKey); a
// subagent's session must exist (its run). A bad key is ErrBadKey.
func (s *Service) Send(ctx context.Context, key, message string, opt SendOptions) (*Turn, error) {
	if err := CheckKey(key); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	if strings.TrimSpace(message) == "" {
		return nil, fmt.Errorf("send to %s: empty message", key)
	}
	if IsSubagentKey(key) {
		return s.sendSubagent(ctx, key, message, opt)
	}
	if opt.Steer {
		return nil, fmt.Errorf("send to %s: steering is for a running subagent (ava:subagent:S-…); a message to a main session joins or follows its turn", key)
	}
	idem, err := messageKey(key, message, opt)
	if err != nil {
		return nil, err
	}
	created, err := s.open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("send to %s: %w", key, err)
	}
	if t := s.answerWaiting(ctx, key, message, opt); t != nil {
		return t, nil // the answer to the proposal its turn waits for (answer.go)
	}
	if opt.Budget > 0 && s.cfg.Budgets != nil {
		if err := s.cfg.Budgets.SetSessionBudget(ctx, key, opt.Budget); err != nil {
			return nil, fmt.Errorf("send to %s: %w", key, err)
		}
	}
	t := &Turn{Session: key, message: message, opt: opt, key: idem, done: make(chan struct{}), span: trace.SpanContextFromContext(ctx),
		redactor: s.cfg.Redactor}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if err := s.keepKeyedLocked(t); err != nil {
		return nil, err
	}
	m := s.sessions[key]
	// The session's first turn: nothing here ran in it, and it did not
	// exist a moment ago (see Turn.fresh).
	t.fresh = created && m == nil
	if m == nil {
		m = &main{state: Idle}
		s.sessions[key] = m
	}
	if m.current != nil {
		switch {
		case m.current.report:
			// A report Ava started by itself gives way to the person: their
			// turn reads the same results (they are in the history).
			m.queue = append([]*Turn{t}, m.queue...)
			if m.current.cancel != nil {
				m.current.cancel(ErrSuperseded)
			}
			return t, nil
		case s.mergeable(m, opt):
			t.message = m.current.message + "\n\n" + message
			t.merged, t.prev = true, m.current
			m.queue = append([]*Turn{t}, m.queue...)
			s.stopLocked(key, m, ErrMerged)
			s.log.Info("a new message merged into the running turn", "session", key)
			return t, nil
		case opt.Supersede:
			m.queue = append([]*Turn{t}, m.queue...)
			s.stopLocked(key, m, ErrSuperseded)
			return t, nil
		case opt.Queue:
			t.queued = true
			m.queue = append(m.queue, t)
			return t, nil
		}
		s.dropKeyedLocked(t)
		return nil, fmt.Errorf("send to %s: %w: a turn is running; queue the message, supersede it, or wait", key, ErrBusy)
	}
	s.startLocked(key, m, t)
	return t, nil
}

// open makes sure the main session key exists before a message to it:
// a session a turn holds here or the store holds goes on; an unknown
// one is created if its key may name a new session (CheckNewKey), so
// every channel creates sessions under the same rule. It reports
// whether it created the session.
func (s *Service) open(ctx context.Context, key string) (created bool, err error) {
	if s.holds(key) {
		return false, nil
	}
	if s.cfg.Store == nil {
		return false, CheckNewKey(key)
	}
	_, err = s.cfg.Store.GetSession(ctx, key)
	if !errors.Is(err, store.ErrNotFound) {
		return false, err // nil: it exists
	}
	if err := CheckNewKey(key); err != nil {
		return false, err
	}
	if _, err := s.cfg.Store.EnsureSession(ctx, key); err != nil {
		return false, fmt.Errorf("new session: %w", err)
	}
	return true, nil
}

// holds reports whether a turn of the main session runs or waits here.
func (s *Service) holds(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[key] != nil
}

// sendSubagent routes a message to a subagent's follow-up path.
func (s *Service) sendSubagent(ctx context.Context, key, message string, opt SendOptions) (*Turn, error) {
	id := key[strings.LastIndex(key, ":")+1:]
	h, queued, err := s.cfg.Subagents.SendFollowUp(ctx, id, message, opt.Queue || opt.Steer, opt.Steer)
	if err != nil {
		return nil, err
	}
	t := &Turn{Session: key, message: message, opt: opt, done: make(chan struct{}), model: h.Model(), queued: queued,
		redactor: s.cfg.Redactor}
	s.wg.Go(func() {
		defer close(t.done)
		select {
		case <-h.Done():
		case <-s.ctx.Done():
			t.err = ErrClosed
			return
		}
		r, _ := h.Result()
		t.res = Result{Status: r.Status, Text: r.Summary, Session: key, Model: h.Model().Name(),
			Tokens: orchestrator.Tokens{Total: r.TokensUsed}, CostCents: r.CostCents,
			DurationMs: r.Active().Milliseconds(), Iterations: r.Iterations, Error: r.Error}
	})
	return t, nil
}

// mergeable reports whether a message sent with opt joins the running
// turn of m (caller holds s.mu).
func (s *Service) mergeable(m *main, opt SendOptions) bool {
	cur := m.current
	return opt.Merge && s.cfg.MergeWindow > 0 && cur.opt.Merge && !cur.started.IsZero() &&
		time.Since(cur.started) < s.cfg.MergeWindow
}

// startLocked starts t as m's current turn (caller holds s.mu).
func (s *Service) startLocked(key string, m *main, t *Turn) {
	ctx, cancel := context.WithCancelCause(s.ctx)
	if t.span.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, t.span)
	}
	t.cancel, t.started = cancel, time.Now()
	m.current = t
	if !t.report {
		s.lastOpts[key] = SendOptions{Model: t.opt.Model, Limits: t.opt.Limits}
	}
	s.setStateLocked(key, m, Running)
	s.wg.Go(func() {
		// Results held while the previous turn ran come before this
		// turn's message.
		s.flushResults(key)
		s.run(ctx, t)
		t.cause = context.Cause(ctx)
		cancel(nil)
		s.noticeTurn(t)
		// The session's state has moved on (idle, waiting for subagents
		// or the next queued turn) before anyone hears the turn is done.
		if !s.turnEnded(key, t) {
			s.flushResults(key)
			// Results held while it ran, or that ended with it, are
			// reported now if nothing else of the session runs.
			s.maybeReport(key)
		}
		close(t.done)
	})
}

// storedParts are the parts of t's message the turns merged into it
// stored in the history, in order: the orchestrator stores only the
// rest, so each message is stored once, when its turn started.
func (t *Turn) storedParts() []string {
	if t.prev == nil {
		return nil
	}
	parts := t.prev.storedParts()
	if t.prev.storedText != "" {
		parts = append(parts, t.prev.storedText)
	}
	return parts
}

// turnBusy reports whether a turn of the session runs in this process:
// meanwhile its subagents' results are held (subagent.Manager.HoldResults)
// so that they come after the turn's messages.
func (s *Service) turnBusy(parent string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sessions[parent]
	return m != nil && m.current != nil
}

// flushResults announces the results held while the session's turn ran.
func (s *Service) flushResults(key string) {
	if s.cfg.Subagents == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.cfg.Subagents.FlushResults(ctx, key)
}

// run answers one message: a person's answer to a pending spawn
// proposal (answer.go), or an orchestrator turn.
func (s *Service) run(ctx context.Context, t *Turn) {
	if t.report {
		s.runReport(ctx, t)
		return
	}
	if !t.fresh && s.answerProposal(ctx, t) {
		return
	}
	orch, model, err := s.cfg.Orchestrator(t.opt.Model, t.opt.Limits)
	if err != nil {
		t.err = err
		t.res = Result{Status: lifecycle.Error, Session: t.Session, Error: err.Error()}
		return
	}
	t.model = model
	offline := s.cfg.Offline != nil && s.cfg.Offline(model)
	res, stored, err := orch.AskMessage(ctx, t.Session, t.opt.User, orchestrator.Message{Text: t.message, Stored: t.storedParts(), New: t.fresh,
		Idempotency: t.key})
	t.storedText = stored
	t.res, t.err = orchestrator.JSON(res, t.Session, model, offline), err
}

// turnEnded starts the next queued turn, or settles the state. It
// reports whether a next turn started.
func (s *Service) turnEnded(key string, t *Turn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sessions[key]
	if m == nil || m.current != t {
		return false
	}
	m.current = nil
	if len(m.queue) > 0 && !s.closed {
		next := m.queue[0]
		m.queue = m.queue[1:]
		s.startLocked(key, m, next)
		return true
	}
	s.settleLocked(key, m)
	return false
}

// settleLocked sets an idle session's state from its subagents and drops
// it from memory once idle: its entry here and its event journal (the
// events stay in the store; a stream that was following it reads on from
// there, and the next turn numbers on from the store).
func (s *Service) settleLocked(key string, m *main) {
	if m.current != nil {
		return
	}
	if s.cfg.Subagents != nil && len(s.cfg.Subagents.RunningFor(key)) > 0 {
		s.setStateLocked(key, m, WaitingForSubagents)
		return
	}
	s.setStateLocked(key, m, Idle)
	delete(s.sessions, key)
	s.cfg.Hub.Forget(key)
}

// subagentFinished settles the parent session when its last subagent
// ends.
func (s *Service) subagentFinished(parent string) {
	s.mu.Lock()
	if m := s.sessions[parent]; m != nil {
		s.settleLocked(parent, m)
	}
	s.mu.Unlock()
	s.maybeReport(parent)
}

// setStateLocked records and publishes a state change.
func (s *Service) setStateLocked(key string, m *main, st State) {
	if m.state == st && st != Running {
		return
	}
	m.state = st
	ev := event.New(event.SessionState, event.StateContent{State: string(st)})
	ev.Session, ev.Agent = key, event.OrchestratorID
	logErr := func(_ event.Event, err error) {
		if err != nil {
			s.log.Error("publish session state", "session", key, "state", st, "err", err)
		}
	}
	if st == Running {
		// A turn starts: its state goes out without waiting for the
		// store under the service's lock, in order with the session's
		// other events (stored before anyone sees it). The state that
		// ends the turn is published and waited for below, after it in
		// the session's order, so it too is stored once the turn is
		// reported done.
		s.cfg.Hub.PublishAsync(ev, logErr)
		return
	}
	_, err := s.cfg.Hub.Publish(ev)
	logErr(ev, err)
}

// Turns returns the done channels of every turn running or queued, on
// any session and from any channel (a daemon's drain waits for them).
func (s *Service) Turns() []<-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []<-chan struct{}
	for _, m := range s.sessions {
		if m.current != nil {
			out = append(out, m.current.done)
		}
		for _, t := range m.queue {
			out = append(out, t.done)
		}
	}
	return out
}

// State returns a main session's state.
func (s *Service) State(key string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.sessions[key]; m != nil {
		return m.state
	}
	if s.cfg.Subagents != nil && len(s.cfg.Subagents.RunningFor(key)) > 0 {
		return WaitingForSubagents
	}
	return Idle
}

// Stop cancels the session's running turn and its queue (a main
// session; with CancelSubagentsOnStop, also its subagents) or stops the
// subagent (a subagent key). It reports whether anything was running.
func (s *Service) Stop(key string) (bool, error) {
	if IsSubagentKey(key) {
		id := key[strings.LastIndex(key, ":")+1:]
		h, err := s.cfg.Subagents.Cancel(id)
		if err != nil {
			return false, err
		}
		return !h.Status().Status.Final(), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sessions[key]
	running := m != nil && m.current != nil
	if m != nil {
		for _, q := range m.queue {
			q.err = fmt.Errorf("message to %s: %w", key, ErrStopped)
			q.res = Result{Status: lifecycle.Cancelled, Session: key, Error: q.err.Error()}
			close(q.done)
		}
		m.queue = nil
	}
	if s.stopLocked(key, m, ErrStopped) > 0 {
		running = true
	}
	return running, nil
}

// stopLocked cancels m's current turn (m may be nil) with cause and, by
// configuration, the session's subagents, and returns how many subagents
// it cancelled (caller holds s.mu).
func (s *Service) stopLocked(key string, m *main, cause error) int {
	if m != nil && m.current != nil && m.current.cancel != nil {
		m.current.cancel(cause)
	}
	if !s.cfg.CancelSubagentsOnStop || s.cfg.Subagents == nil {
		return 0
	}
	n := s.cfg.Subagents.CancelSession(key)
	if n > 0 {
		s.log.Info("subagents cancelled with their session's turn", "session", key, "count", n, "cause", cause)
	}
	return n
}

// Follow is Subscribe for a long-lived reader: it outlives the session's
// idle periods (event.Hub.Follow).
func (s *Service) Follow(key string, after uint64) *event.Subscription {
	return s.cfg.Hub.Follow(key, after)
}

// Subscribe returns a subscription to the session's events after after.
func (s *Service) Subscribe(key string, after uint64) *event.Subscription {
	return s.cfg.Hub.Subscribe(key, after)
}

// LastSeq is the session's last event number.
func (s *Service) LastSeq(key string) (uint64, error) {
	return s.cfg.Hub.LastSeq(key)
}

// Forget drops the session's events from memory (they stay stored).
func (s *Service) Forget(key string) { s.cfg.Hub.Forget(key) }

// Subagents returns the running subagents a session started.
func (s *Service) Subagents(key string) []*subagent.Handle {
	if s.cfg.Subagents == nil {
		return nil
	}
	return s.cfg.Subagents.RunningFor(key)
}

// Close cancels every turn and waits for them to end.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	unwatch := s.unwatch
	s.unwatch = nil
	s.mu.Unlock()
	for _, stop := range unwatch {
		stop()
	}
	s.cancel(fmt.Errorf("%w: %w", ErrClosed, agent.ErrCancelled))
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		return errors.New("close sessions: turns still running after a minute")
	}
	return nil
}

// noticeTurn tells the observers that a main session's turn ended (its
// messages are stored by then).
func (s *Service) noticeTurn(t *Turn) {
	r := t.res
	if r.Status == "" && t.err != nil {
		r.Status, r.Error = lifecycle.Error, t.err.Error()
	}
	r = r.Masked(t.redactor)
	var text string
	if t.report {
		text = r.Text
	}
	s.cfg.Observers.NotifyTurnEnded(observe.TurnEnded{Session: t.Session, Status: r.Status, Error: r.Error, Report: t.report, Text: text,
		Figures: observe.Figures{Tokens: r.Tokens.Total, CostCents: r.CostCents, Iterations: r.Iterations}, Time: time.Now()})
}

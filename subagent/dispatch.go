package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/transcript"
)

// Dispatcher hands runs to the workers of a cluster (package cluster)
// instead of running them in the process that spawns them: the runs wait
// in a job queue in the shared database, and any worker's Manager runs
// them with Execute, with the same code as a run started here.
type Dispatcher interface {
	// Dispatch records run (queued, owned by store.OwnerQueue) with msgs
	// in its own session (the context it starts from) and schedules it,
	// in one transaction.
	Dispatch(ctx context.Context, run store.Run, msgs []store.Message) error
	// Requeue gives a finished run (status from) a follow-up: it moves
	// back to queued, owned by store.OwnerQueue, with msgs added to its
	// conversation, and is scheduled, in one transaction. A run no
	// longer from gives an error wrapping store.ErrInvalidTransition.
	Requeue(ctx context.Context, runID string, from lifecycle.Status, msgs []store.Message) error
	// Claim makes owner the owner of a queued run, when fewer than limit
	// runs are active in the whole cluster (limit 0: no limit). A run no
	// longer waiting gives an error wrapping store.ErrInvalidTransition;
	// a full cluster one wrapping ErrLimit.
	Claim(ctx context.Context, runID, owner string, limit int) (store.Run, error)
	// Unclaim gives a run owner claimed but did not start back to the
	// job queue.
	Unclaim(ctx context.Context, runID, owner string) error
	// Control sends c to the process running the run, wherever it is.
	Control(ctx context.Context, c Control) error
}

// Control operations.
const (
	// ControlCancel stops the run.
	ControlCancel = "cancel"
	// ControlSteer delivers Text into the running run's conversation.
	ControlSteer = "steer"
	// ControlAnswer answers the open question Run (a question ID, Q-…)
	// of Session with Text, by By.
	ControlAnswer = "answer"
)

// Control is a request to the process that runs a subagent.
type Control struct {
	Op string `json:"op"`
	// Run is the run's short ID.
	Run     string `json:"run"`
	Text    string `json:"text,omitempty"`
	Session string `json:"session,omitempty"`
	By      string `json:"by,omitempty"`
}

// cancelRetry is how often a cancel of a run elsewhere is sent again
// while the run has not ended (the worker may have been claiming it when
// the first one came), and cancelGiveUp when it stops trying.
const (
	cancelRetry  = 500 * time.Millisecond
	cancelGiveUp = 30 * time.Second
)

// dispatch records an admitted-by-the-cluster run and schedules it on a
// worker; the handle stays here as the run's remote view (Status, Wait,
// Cancel), completed when the run ends wherever it runs (RemoteEnded).
func (m *Manager) dispatch(ctx context.Context, h *Handle) error {
	if m.isClosed() {
		return ErrClosed
	}
	fork, err := transcript.ToStore(store.SubagentSessionPrefix+h.id, h.id, h.req.Fork)
	if err != nil {
		m.dropIDs(h)
		return fmt.Errorf("spawn: encode the forked conversation: %w", err)
	}
	m.register(h)
	// The cost cap it was given (the session's budget left, the group's
	// share) goes with its record, so that the worker applies it and
	// every process counts it as committed (reservedCents).
	if share := h.req.group.remoteShare(); share > 0 && (h.limits.MaxCostCents == 0 || share < h.limits.MaxCostCents) {
		h.limits.MaxCostCents = share
	}
	h.req.Config.MaxCostCents = h.limits.MaxCostCents
	h.mu.Lock()
	h.remote, h.status, h.stored = true, lifecycle.Queued, lifecycle.Queued
	h.queuedAt = m.now()
	h.mu.Unlock()
	run := h.storeRun(lifecycle.Queued, nil, store.OwnerQueue)
	m.watchRemote(h)
	if err := m.opt.Dispatch.Dispatch(ctx, run, fork); err != nil {
		m.unwatchRemote(h)
		m.dropIDs(h)
		m.opt.Hub.Forget(h.SessionKey())
		return fmt.Errorf("spawn: %w", err)
	}
	h.markSpawned()
	if g := h.req.group; g != nil {
		m.wg.Go(func() { m.cancelWithGroup(g, h) })
	}
	return nil
}

// cancelWithGroup cancels a remote group member when its group ends
// first (its combined timeout, a cancel), but not when this process
// shuts down: the member goes on on its worker.
func (m *Manager) cancelWithGroup(g *Group, h *Handle) {
	select {
	case <-g.ctx.Done():
		if !errors.Is(context.Cause(g.ctx), ErrClosed) {
			h.Cancel()
		}
	case <-h.Done():
	}
}

// HandleControl applies a control request to the run it names when it
// runs in this process (others ignore it).
func (m *Manager) HandleControl(c Control) {
	if c.Op == ControlAnswer {
		// Only the process whose run asked holds the question.
		_, _ = m.asked.Answer(c.Run, c.Session, c.Text, c.By)
		return
	}
	m.mu.Lock()
	h := m.handles[c.Run]
	m.mu.Unlock()
	if h == nil || h.isRemote() {
		return
	}
	switch c.Op {
	case ControlCancel:
		h.Cancel()
	case ControlSteer:
		h.mu.Lock()
		if !h.status.Final() {
			h.steers = append(h.steers, c.Text)
		}
		h.mu.Unlock()
	}
}

// Execute claims a run waiting in the cluster's job queue and starts it
// in this process, from what is stored of it, with the same code as a
// run spawned here; it returns once the run has started (the run then
// belongs to this process, and recovery covers it if the process dies).
// It returns nil at once when the run no longer waits (a worker claimed
// it, it was cancelled), an error wrapping ErrLimit when the cluster
// runs as many subagents as its limit allows (the job waits and tries
// again), and ErrClosed, with the run given back to the queue, when the
// manager is closing.
func (m *Manager) Execute(ctx context.Context, runID string) error {
	return m.execute(ctx, runID, m.limits().maxConcurrent, false)
}

// execute claims and runs a queued run; cancelled ends it cancelled
// before it calls the model.
func (m *Manager) execute(ctx context.Context, runID string, limit int, cancelled bool) error {
	if m.isClosed() {
		return ErrClosed
	}
	r, err := m.opt.Dispatch.Claim(ctx, runID, m.ownerID(), limit)
	if errors.Is(err, store.ErrInvalidTransition) {
		return nil
	}
	if err != nil {
		return err
	}
	h, history, input, stored, err := m.prepareResume(ctx, r)
	if err != nil {
		m.log.Error("start dispatched subagent; ending it interrupted", "id", r.ShortID, "err", err)
		m.endUnresumable(ctx, r, err)
		return nil
	}
	if err := m.admitResumed(h); err != nil {
		if errors.Is(err, ErrClosed) {
			return m.giveBack(r, err)
		}
		m.endUnresumable(ctx, r, err)
		return nil
	}
	if cancelled {
		h.Cancel()
	}
	m.wg.Go(func() { h.goOn(history, input, stored) })
	return nil
}

// giveBack returns a claimed run that did not start to the job queue
// (the job is tried again), and returns cause.
func (m *Manager) giveBack(r store.Run, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), finalWriteTimeout)
	defer cancel()
	if err := m.opt.Dispatch.Unclaim(ctx, r.ID, m.ownerID()); err != nil {
		m.log.Error("give a subagent back to the job queue", "id", r.ShortID, "err", err)
	}
	return cause
}

// followUpRemote gives a finished run a follow-up through the cluster's
// job queue: its record goes back to queued with the message added to
// its conversation, and h becomes the waiting view of its next turn.
func (m *Manager) followUpRemote(ctx context.Context, h *Handle, message string) error {
	<-h.Done() // a run that has just ended may still be finishing
	h.mu.Lock()
	from := h.status
	h.mu.Unlock()
	history, err := h.history(ctx)
	if err != nil {
		return fmt.Errorf("send to %s: %w", h.id, err)
	}
	// A run stopped in a tool call gets its calls answered first, as a
	// follow-up in one process does.
	input := answerPending(history, llm.UserText(message))
	msgs, err := transcript.ToStore(h.SessionKey(), h.id, []llm.Message{input})
	if err != nil {
		return fmt.Errorf("send to %s: %w", h.id, err)
	}
	m.mu.Lock()
	if _, active := m.handles[h.id]; active {
		m.mu.Unlock()
		return fmt.Errorf("send to %s: %w", h.id, ErrBusy)
	}
	m.mu.Unlock()
	h.mu.Lock()
	prev, prevDone := h.result, h.done
	h.mu.Unlock()
	h.reset(lifecycle.Queued, nil)
	h.mu.Lock()
	h.remote, h.stored, h.result = true, lifecycle.Queued, nil
	h.mu.Unlock()
	m.watchRemote(h)
	if err := m.opt.Dispatch.Requeue(context.WithoutCancel(ctx), h.uuid, from, msgs); err != nil {
		m.unwatchRemote(h)
		h.mu.Lock()
		h.status, h.stored, h.result, h.done = from, from, prev, prevDone
		h.mu.Unlock()
		if errors.Is(err, store.ErrInvalidTransition) {
			return fmt.Errorf("send to %s: %w (another message started it first); send again to queue", h.id, ErrBusy)
		}
		return fmt.Errorf("send to %s: %w", h.id, err)
	}
	return nil
}

// clusterReservedCents is the cost still committable by the session's
// active runs anywhere in the cluster: each one's cap (stored with its
// record) minus what it has spent, as the store records it.
func (m *Manager) clusterReservedCents(ctx context.Context, session string) (float64, error) {
	runs, err := m.opt.Store.ListRuns(ctx, store.RunFilter{ParentSession: session, Active: true})
	if err != nil {
		return 0, fmt.Errorf("read the session's running subagents: %w", err)
	}
	var sum float64
	for _, r := range runs {
		var cfg Config
		if json.Unmarshal(r.Config, &cfg) == nil && cfg.MaxCostCents > 0 {
			sum += max(cfg.MaxCostCents-r.CostCents, 0)
		}
	}
	return sum, nil
}

// remoteAnswerWait bounds how long an answer sent to another process
// waits for that process to confirm it (its QuestionAnswered event).
const remoteAnswerWait = 5 * time.Second

// answerRemote answers a question that a run on another process of the
// cluster asked: the answer goes out as a control request, and it counts
// as given once the asking process publishes the question's
// QuestionAnswered event in session with this answer. Otherwise the
// question was not open (question.ErrNoQuestion).
func (m *Manager) answerRemote(id, session, answer, by string) (question.Question, error) {
	last, err := m.opt.Hub.LastSeq(session)
	if err != nil {
		return question.Question{}, fmt.Errorf("answer %s: %w", id, err)
	}
	sub := m.opt.Hub.Follow(session, last)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(m.ctx, remoteAnswerWait)
	defer cancel()
	if err := m.opt.Dispatch.Control(ctx, Control{Op: ControlAnswer, Run: id, Text: answer, Session: session, By: by}); err != nil {
		return question.Question{}, fmt.Errorf("answer %s: %w", id, err)
	}
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			return question.Question{}, fmt.Errorf("answer %s: %w (no process of the cluster holds it open)", id, question.ErrNoQuestion)
		}
		for _, ev := range evs {
			var c event.AnsweredContent
			if ev.Type != event.QuestionAnswered || ev.Decode(&c) != nil || c.QuestionID != id {
				continue
			}
			if c.By != by || c.Answer != answer {
				return question.Question{}, fmt.Errorf("answer %s: %w (it ended %s first)", id, question.ErrNoQuestion, c.By)
			}
			return question.Question{ID: id, Session: session, SubagentID: c.SubagentID, Role: c.Role}, nil
		}
	}
}

// storedConfig is a run's configuration as its record keeps it: the
// spawn's Config, and "waited" when a caller waits for the result (a
// worker running it then leaves the result to that caller instead of
// announcing it into the parent's history).
func storedConfig(cfg Config, waited bool) json.RawMessage {
	raw, _ := json.Marshal(struct {
		Config
		Waited bool `json:"waited,omitempty"`
	}{cfg, waited})
	return raw
}

// waitedRun reports whether a dispatched run's result goes back to a
// caller waiting for it (storedConfig). A run taken over after its
// process died is announced instead, as in one process.
func (m *Manager) waitedRun(r store.Run) bool {
	if m.opt.Dispatch == nil || r.Attempts > 0 {
		return false
	}
	var w struct {
		Waited bool `json:"waited"`
	}
	return json.Unmarshal(r.Config, &w) == nil && w.Waited
}

package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/transcript"
)

// DefaultResumeAttempts is how many times a run may be resumed after its
// process stopped when Options.ResumeAttempts is unset.
const DefaultResumeAttempts = 3

// unknownResult is the result a resumed run's model gets for a tool call
// that was in flight when its process stopped: the tool is never run
// again behind the model's back.
const unknownResult = "result unknown: the process running this subagent stopped while this tool call was in flight, " +
	"and it was not run again. It may or may not have taken effect; check before repeating it."

// resumedNote tells a resumed run's model what happened.
const resumedNote = "[Resumed] The process running you stopped; you were resumed from your last checkpoint " +
	"(attempt %d). Go on with the task."

// quarantinedSummary is the summary of a run interrupted because it used
// up its resume attempts.
const quarantinedSummary = "quarantined: its process stopped again after it was resumed as many times as allowed (AVA_RESUME_ATTEMPTS)"

// resumeAttempts is the limit of resumes per run; 0: none.
func (m *Manager) resumeAttempts() int {
	return max(m.opt.ResumeAttempts, 0)
}

// resumable reports whether a gone owner's run may be resumed here: its
// role is known and allows it (called inside the store's transaction).
func (m *Manager) resumable(r store.Run) bool {
	role, ok := m.roleSet().roles[r.Role]
	return ok && role.Resume
}

// resume takes a run this process took over (store.RecoverOwner) and
// runs it from its last checkpoint. It waits for a slot like a
// follow-up, whatever the overflow policy and queue bound, since it was
// admitted once already. A run that cannot be resumed (its role or model
// is gone, its conversation unreadable) ends interrupted, and its parent
// is told.
func (m *Manager) resume(ctx context.Context, r store.Run) {
	h, history, input, stored, err := m.prepareResume(ctx, r)
	if err != nil {
		m.log.Error("resume subagent; ending it interrupted", "id", r.ShortID, "err", err)
		m.endUnresumable(ctx, r, err)
		return
	}
	if err := m.admitResumed(h); err != nil {
		m.log.Error("resume subagent; ending it interrupted", "id", r.ShortID, "err", err)
		m.endUnresumable(ctx, r, err)
		return
	}
	m.log.Info("subagent resumed from its last checkpoint", "id", r.ShortID, "attempt", r.Attempts, "messages", len(history))
	h.announceResumed(r.Attempts, len(history))
	m.wg.Go(func() { h.goOn(history, input, stored) })
}

// goOn runs a run rebuilt from its record once it has a slot: from
// history with input, which is already stored when stored is set.
func (h *Handle) goOn(history []llm.Message, input llm.Message, stored bool) {
	h.afterSlot(func() {
		h.mu.Lock()
		h.inputStored = stored
		h.mu.Unlock()
		h.runFrom(history, input)
	})
}

// prepareResume rebuilds a taken-over run's handle and the point it goes
// on from: history and input for its next turn, and whether input is
// already stored (the last stored message, the model's call not made).
func (m *Manager) prepareResume(ctx context.Context, r store.Run) (*Handle, []llm.Message, llm.Message, bool, error) {
	var cfg Config
	if err := json.Unmarshal(r.Config, &cfg); err != nil {
		return nil, nil, llm.Message{}, false, fmt.Errorf("stored config: %w", err)
	}
	// The model it ran on, named by the operator: the store holds only
	// what a spawn admitted. Whether it still loads is checked again.
	cfg.Model, cfg.ModelBy = r.Model, llm.NamedByOperator
	// The tool call that waited for it died with its process: the result
	// is announced into the parent's history; unless it is a dispatched
	// run starting on a worker, whose caller still waits (waitedRun).
	req := Request{Config: cfg, Parent: tool.Caller{AgentID: r.ParentAgent, SessionKey: r.ParentSession}, Background: !m.waitedRun(r),
		mode: Mode(r.Mode), groupID: r.GroupID, admitted: m.opt.Dispatch != nil, resumed: true}
	h, err := m.prepare(ctx, req)
	if err != nil {
		return nil, nil, llm.Message{}, false, err
	}
	h.id, h.uuid, h.created, h.turns = r.ShortID, r.ID, r.CreatedAt, 1
	if r.Status == lifecycle.Queued && r.StartedAt == nil {
		h.turns = 0 // it never started: its first turn announces its start
	}
	h.status, h.stored, h.attempt, h.owner = r.Status, r.Status, r.Attempts, r.Owner
	m.heldUnder(r.Owner)
	last, err := m.restoreResult(r)
	if err != nil {
		return nil, nil, llm.Message{}, false, err
	}
	h.adoptResumed(r, last)
	h.limits = remainingLimits(h.limits, h.base)
	var msgs []store.Message
	err = m.ride(func(ctx context.Context) (err error) {
		msgs, err = m.opt.Store.Messages(ctx, r.SessionKey, 0)
		return err
	})
	if err != nil {
		return nil, nil, llm.Message{}, false, fmt.Errorf("load conversation: %w", err)
	}
	conv, err := transcript.FromStore(msgs)
	if err != nil {
		return nil, nil, llm.Message{}, false, fmt.Errorf("load conversation: %w", err)
	}
	history, input, stored := resumePoint(conv, taskPrompt(cfg), r.Attempts)
	if r.Status == lifecycle.Queued && r.StartedAt == nil {
		// It never started: what is stored is the context it starts
		// from (a forked conversation), and its task comes next.
		history, input, stored = conv, llm.UserText(taskPrompt(cfg)), false
	}
	h.messages = history
	return h, history, input, stored, nil
}

// resumePoint is where a stored conversation goes on from:
//   - nothing stored (the process stopped before the first checkpoint):
//     the task, from the start;
//   - the model's last response asks for tools whose results are not
//     stored (they were running): each gets an unknown result, never a
//     second run, with a note that the run was resumed;
//   - the last message is the person's or the tools' results (the next
//     model call was on its way): that message is the input again, as
//     stored (stored is true);
//   - the model's final answer is stored but the run's end is not (it
//     stopped in between): a note asks for the answer again.
func resumePoint(conv []llm.Message, task string, attempt int) (history []llm.Message, input llm.Message, stored bool) {
	note := llm.Text(fmt.Sprintf(resumedNote, attempt))
	if len(conv) == 0 {
		return nil, llm.UserText(task), false
	}
	last := conv[len(conv)-1]
	switch {
	case last.Role == llm.RoleUser:
		return conv[:len(conv)-1], last, true
	case len(last.ToolCalls()) > 0:
		return conv, llm.Message{Role: llm.RoleUser, Content: append(unknownResults(last), note)}, false
	}
	note.Text += " Your final answer was not recorded: give it again."
	return conv, llm.Message{Role: llm.RoleUser, Content: []llm.Block{note}}, false
}

// unknownResults are error results for each tool call of msg, saying
// that its result is unknown.
func unknownResults(msg llm.Message) []llm.Block {
	var out []llm.Block
	for _, c := range msg.ToolCalls() {
		out = append(out, llm.ToolResult(c.ToolCallID, unknownResult, true))
	}
	return out
}

// answerPending makes a turn's input valid after history: when history
// ends with tool calls whose results were never stored (a run whose
// process stopped mid-call, resumed by a follow-up), the input carries
// unknown results for them first.
func answerPending(history []llm.Message, input llm.Message) llm.Message {
	if len(history) == 0 || input.Role != llm.RoleUser {
		return input
	}
	last := history[len(history)-1]
	if last.Role != llm.RoleAssistant || len(last.ToolCalls()) == 0 {
		return input
	}
	input.Content = append(unknownResults(last), input.Content...)
	return input
}

// remainingLimits are what is left of l after used: a resumed run does
// not get its limits anew, though it gets at least one more model call.
// Its timeout starts again (the time its process was down is not its).
func remainingLimits(l agent.Limits, used counters) agent.Limits {
	if l.MaxIterations > 0 {
		l.MaxIterations = max(l.MaxIterations-used.iterations, 1)
	}
	if l.MaxTokens > 0 {
		l.MaxTokens = max(l.MaxTokens-used.tokens, 1)
	}
	if l.MaxCostCents > 0 {
		l.MaxCostCents = max(l.MaxCostCents-used.cost, 0.01)
	}
	return l
}

// admitResumed gives a taken-over run a slot, or a place in the queue
// whatever its bound.
func (m *Manager) admitResumed(h *Handle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	// A remote view of the run (it was dispatched from this process)
	// gives way to the run itself; it still ends with RemoteEnded.
	if other, active := m.handles[h.id]; active && !other.isRemote() {
		return fmt.Errorf("resume %s: %w", h.id, ErrBusy)
	}
	m.handles[h.id] = h
	if len(m.queue) == 0 && len(m.running) < m.limits().maxConcurrent {
		m.running[h.id] = h
		h.reset(lifecycle.Pending, nil)
		return nil
	}
	h.reset(lifecycle.Queued, make(chan struct{}))
	m.queue = append(m.queue, h)
	return nil
}

// announceResumed publishes SubagentResumed in the parent's session (its
// subagent:resumed lifecycle entry, with the attempt number).
func (h *Handle) announceResumed(attempt, messages int) {
	ev := h.spawnEvent(event.SubagentResumed, 0)
	var c event.SubagentSpawnContent
	_ = ev.Decode(&c)
	c.Attempt = attempt
	c.Summary = fmt.Sprintf("resumed from its last checkpoint (%d messages), attempt %d", messages, attempt)
	ev = event.New(event.SubagentResumed, c)
	if ev = h.parentEvent(ev); ev.Session == "" {
		return
	}
	// Fenced by the lease it was taken over under: a process that lost
	// the run again meanwhile announces nothing.
	ev.Fence = h.lease()
	if _, err := h.m.opt.Hub.Publish(ev); err != nil {
		h.m.log.Error("publish to parent session", "id", h.id, "type", ev.Type, "err", err)
	}
}

// unresumableError is the recorded error of a run that could not go on:
// what happened to it, and why it could not go on. A run that never
// started (claimed from the queue, or taken over before its first call)
// says so, rather than that its process stopped.
func unresumableError(r store.Run, cause error) string {
	if r.StartedAt == nil {
		return fmt.Sprintf("interrupted: it had not started, and it could not be started: %v", cause)
	}
	return fmt.Sprintf("%s; it could not be resumed: %v", interruptedSummary, cause)
}

// endUnresumable ends a taken-over run that cannot go on as interrupted
// and records its end as recovery does; the end write rides out an
// outage like a run's own end (recordEnd), so the run is not left
// active under a live owner that recovery never looks at.
func (m *Manager) endUnresumable(ctx context.Context, r store.Run, cause error) {
	fin := &store.RunFinish{Error: unresumableError(r, cause),
		Tokens: r.Tokens, CostCents: r.CostCents, Iterations: r.Iterations, Active: r.Active, EndedAt: m.now()}
	err := m.ride(func(ctx context.Context) error {
		return m.opt.Store.TransitionRun(ctx, r.ID, r.Owner, []lifecycle.Status{r.Status}, lifecycle.Interrupted, fin)
	})
	if err != nil {
		m.log.Error("end unresumable run", "id", r.ShortID, "err", err)
		return
	}
	r.Status, r.Error, r.EndedAt = lifecycle.Interrupted, fin.Error, &fin.EndedAt
	m.recordInterrupted(r)
	if r.ParentSession != "" {
		if err := m.announceStored(context.WithoutCancel(ctx), r); err != nil && !errors.Is(err, context.Canceled) {
			m.log.Error("announce unresumable run", "id", r.ShortID, "err", err)
		}
	}
}

// checkpoint is the handle's agent.Config.Checkpoint: a step's new
// messages and the run's counters go to the store. A step whose tools
// are about to run is written before they run when the role resumes (so
// that a call in flight at a crash is known and never run again); the
// others are written in the background, in order, and the run's end
// waits for them. An error ends the run: it never runs tools whose call
// could not be recorded.
func (h *Handle) checkpoint(cp agent.Checkpoint) error {
	if err := h.waitCheckpoint(); err != nil {
		return err
	}
	h.mu.Lock()
	from := h.ckStored
	h.mu.Unlock()
	if from > len(cp.Messages) {
		from = len(cp.Messages)
	}
	msgs, err := transcript.ToStore(h.SessionKey(), h.id, cp.Messages[from:])
	if err != nil {
		return fmt.Errorf("encode conversation: %w", err)
	}
	h.mu.Lock()
	used := h.total.plus(h.base) // the record holds the run's figures over all its turns
	h.mu.Unlock()
	c := store.Checkpoint{Owner: h.writer(), Messages: msgs, Tokens: used.tokens + cp.Usage.Total(),
		CostCents: used.cost + cp.CostCents, Iterations: used.iterations + cp.Iterations}
	h.mu.Lock()
	h.ckStored = len(cp.Messages)
	h.mu.Unlock()
	if cp.ToolsPending && h.role.Resume {
		return h.writeCheckpoint(c, from)
	}
	done := make(chan struct{})
	h.mu.Lock()
	h.ckDone = done
	h.mu.Unlock()
	h.m.wg.Go(func() {
		err := h.writeCheckpoint(c, from)
		h.mu.Lock()
		h.ckErr = err
		h.mu.Unlock()
		close(done)
	})
	return nil
}

// writeCheckpoint writes c, retrying a store that cannot take it for up
// to the outage bound (the run waits); when it fails, the messages from
// index from on are left to the run's end to record.
func (h *Handle) writeCheckpoint(c store.Checkpoint, from int) error {
	err := h.m.ride(func(ctx context.Context) error {
		return h.m.opt.Store.CheckpointRun(ctx, h.uuid, c)
	})
	if err == nil {
		return nil
	}
	h.m.log.Error("checkpoint subagent", "id", h.id, "err", err)
	h.mu.Lock()
	h.ckStored = min(h.ckStored, from)
	h.mu.Unlock()
	return fmt.Errorf("checkpoint %s: %w", h.id, h.fenced(err))
}

// waitCheckpoint waits for the background checkpoint, if any, and
// returns its error.
func (h *Handle) waitCheckpoint() error {
	h.mu.Lock()
	done := h.ckDone
	h.mu.Unlock()
	if done == nil {
		return nil
	}
	<-done
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ckDone = nil
	err := h.ckErr
	h.ckErr = nil
	return err
}

// resumedFinish adds what the run had used before it was resumed to the
// turn's result, so that its end records the whole run's counters.
func (h *Handle) resumedFinish(res agent.Result) agent.Result {
	h.mu.Lock()
	base := h.base // zeroed when the turn's end is taken (Handle.ended)
	h.mu.Unlock()
	if base == (counters{}) {
		return res
	}
	res.CostCents += base.cost
	res.Iterations += base.iterations
	res.Usage.InputTokens += base.tokens // the split is not stored; the total is
	return res
}

// interruptedRunSummary is the summary of an interrupted run's result.
func interruptedRunSummary(errText string) string {
	if errText == store.QuarantinedError {
		return quarantinedSummary
	}
	return interruptedSummary
}

// suspend leaves a run that a shutdown stopped (a deploy) for the next
// process to resume, when its role allows it: its last step is
// checkpointed and its record stays running under this process, which
// is about to remove its instance, so the next process finds its owner
// gone and takes it over (counting an attempt). Nothing of its end is
// published: it has not ended. It reports false, and the run ends
// interrupted as before, when the run may not resume or the checkpoint
// cannot be written.
func (h *Handle) suspend(ctx context.Context, res agent.Result) bool {
	h.mu.Lock()
	from, stored, foreign := h.stored, h.ckStored, h.foreign
	h.mu.Unlock()
	if !h.role.Resume || h.m.resumeAttempts() == 0 || h.m.ownerID() == "" || foreign || h.attempt >= h.m.resumeAttempts() {
		return false
	}
	if from == lifecycle.Queued {
		// It never started: its record stays queued under this process's
		// lease, and the next process starts it (issue 39 item 9).
		h.m.log.Info("queued subagent left for the next process to start", "id", h.id)
		h.mu.Lock()
		h.status, h.stalled = lifecycle.Interrupted, false
		h.mu.Unlock()
		return true
	}
	if from != lifecycle.Running {
		return false
	}
	c := store.Checkpoint{Owner: h.writer(), Tokens: res.Usage.Total(), CostCents: res.CostCents, Iterations: res.Iterations}
	if stored < len(res.Messages) {
		msgs, err := transcript.ToStore(h.SessionKey(), h.id, res.Messages[stored:])
		if err != nil {
			h.m.log.Error("suspend subagent", "id", h.id, "err", err)
			return false
		}
		c.Messages = msgs
	}
	if err := h.m.opt.Store.CheckpointRun(ctx, h.uuid, c); err != nil {
		h.m.log.Error("suspend subagent; ending it interrupted", "id", h.id, "err", err)
		return false
	}
	h.m.log.Info("subagent left for the next process to resume", "id", h.id)
	h.mu.Lock()
	h.status, h.stalled = lifecycle.Interrupted, false
	h.mu.Unlock()
	return true
}

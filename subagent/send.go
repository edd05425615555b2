package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/transcript"
)

// Send gives a subagent a follow-up message. A finished subagent resumes
// with its conversation intact (taking a concurrency slot again), also
// one that finished in an earlier process: it is restored from the store.
// Each turn's record holds that turn's tokens and cost. While it
// runs, the message is queued for when the current turn ends if queue is
// set, and refused with ErrBusy otherwise. It returns at once.
func (m *Manager) Send(ctx context.Context, id, message string, queue bool) (*Handle, error) {
	if strings.TrimSpace(message) == "" {
		return nil, fmt.Errorf("send to %s: empty message", id)
	}
	h, err := m.Get(id)
	if errors.Is(err, store.ErrNotFound) {
		h, err = m.restore(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if !h.status.Final() {
		defer h.mu.Unlock()
		if !queue {
			return nil, fmt.Errorf("send to %s: %w (status %s); ask to queue the message or wait", h.id, ErrBusy, h.status)
		}
		h.queue = append(h.queue, message)
		return h, nil
	}
	history := h.messages
	h.mu.Unlock()
	if err := m.readmit(h); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.done, h.cancelled, h.status = make(chan struct{}), false, lifecycle.Pending
	h.mu.Unlock()
	m.wg.Go(func() { h.runFrom(history, llm.UserText(message)) })
	return h, nil
}

// readmit takes a slot for a finished handle being resumed.
func (m *Manager) readmit(h *Handle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if _, ok := m.running[h.id]; ok {
		return fmt.Errorf("send to %s: %w", h.id, ErrBusy)
	}
	if len(m.running) >= m.opt.MaxConcurrent {
		return fmt.Errorf("send to %s: %w: %d of %d running", h.id, ErrLimit, len(m.running), m.opt.MaxConcurrent)
	}
	m.running[h.id] = h
	return nil
}

// restore rebuilds the handle of a finished run recorded in the store:
// its configuration, role, model and limits, its conversation and its
// last result, and its event stream numbered on from where it stopped.
func (m *Manager) restore(ctx context.Context, id string) (*Handle, error) {
	run, err := m.opt.Store.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("send to %s: %w", id, err)
	}
	if !run.Status.Final() {
		return nil, fmt.Errorf("send to %s: it is %s in another process: %w", run.ShortID, run.Status, ErrBusy)
	}
	var cfg Config
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return nil, fmt.Errorf("send to %s: stored config: %w", run.ShortID, err)
	}
	cfg.Model = run.Model // the model it ran on, not the alias it was asked for
	req := Request{Config: cfg, Parent: tool.Caller{AgentID: run.ParentAgent, SessionKey: run.ParentSession}, mode: Mode(run.Mode), groupID: run.GroupID}
	h, err := m.prepare(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("send to %s: %w", run.ShortID, err)
	}
	stored, err := m.opt.Store.Messages(ctx, run.SessionKey, 0)
	if err != nil {
		return nil, fmt.Errorf("send to %s: load conversation: %w", run.ShortID, err)
	}
	if h.messages, err = transcript.FromStore(stored); err != nil {
		return nil, fmt.Errorf("send to %s: %w", run.ShortID, err)
	}
	h.id, h.uuid, h.created, h.turns = run.ShortID, run.ID, run.CreatedAt, 1
	h.status, h.stored = run.Status, run.Status
	if len(run.Result) > 0 {
		var r Result
		if json.Unmarshal(run.Result, &r) == nil {
			h.result = &r
		}
	}
	close(h.done)
	m.mu.Lock()
	defer m.mu.Unlock()
	if other, ok := m.handles[h.id]; ok {
		return other, nil // restored meanwhile by another caller
	}
	m.handles[h.id] = h
	return h, nil
}

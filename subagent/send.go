package subagent

import (
	"context"
	"fmt"
	"strings"

	"github.com/avaagent/ava/llm"
)

// Send gives a subagent of this process a follow-up message. A finished
// subagent resumes with its conversation intact (taking a concurrency
// slot again); each turn's record holds that turn's tokens and cost. While it
// runs, the message is queued for when the current turn ends if queue is
// set, and refused with ErrBusy otherwise. It returns at once.
func (m *Manager) Send(ctx context.Context, id, message string, queue bool) (*Handle, error) {
	if strings.TrimSpace(message) == "" {
		return nil, fmt.Errorf("send to %s: empty message", id)
	}
	h, err := m.Get(id)
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
	h.done, h.cancelled, h.status = make(chan struct{}), false, "pending"
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

package subagent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/llm"
)

// Send gives a subagent a follow-up message. A finished subagent resumes
// with its conversation intact (taking a concurrency slot again, or with
// the queue policy waiting for one as a queued run), also one whose
// handle left memory or that finished in an earlier process: it is
// restored from the store (restore). Each turn's record holds that
// turn's tokens and cost. While it runs or waits, the message is queued
// for when the current turn ends if queue is set, and refused with
// ErrBusy otherwise. It returns at once.
func (m *Manager) Send(ctx context.Context, id, message string, queue bool) (*Handle, error) {
	h, _, err := m.SendFollowUp(ctx, id, message, queue, false)
	return h, err
}

// Steer delivers a message into a running subagent's conversation
// without cancelling anything: the run reads it before its next model
// call, as the person's message at that point (its stream shows it
// there). Steers arrive in the order sent. One that its run no longer
// reads (the run ended first) becomes a follow-up turn: it is never
// lost. A finished subagent gets it as a follow-up, like Send.
func (m *Manager) Steer(ctx context.Context, id, message string) (*Handle, error) {
	h, _, err := m.SendFollowUp(ctx, id, message, true, true)
	return h, err
}

// SendFollowUp is Send (steer false) or Steer (steer true), and also
// reports whether the message waits for the running turn to end (queued;
// a steer never does).
func (m *Manager) SendFollowUp(ctx context.Context, id, message string, queue, steer bool) (h *Handle, queued bool, err error) {
	if strings.TrimSpace(message) == "" {
		return nil, false, fmt.Errorf("send to %s: empty message", id)
	}
	h, err = m.lookup(ctx, id)
	if err != nil {
		return nil, false, fmt.Errorf("send to %s: %w", id, err)
	}
	if m.opt.Dispatch != nil {
		if done, err := m.sendInCluster(ctx, h, message, steer); done || err != nil {
			return h, false, err
		}
	}
	h.mu.Lock()
	if !h.status.Final() {
		defer h.mu.Unlock()
		if !queue {
			return nil, false, fmt.Errorf("send to %s: %w (status %s); ask to queue the message or wait", h.id, ErrBusy, h.status)
		}
		if steer {
			h.steers = append(h.steers, message)
			return h, false, nil
		}
		h.queue = append(h.queue, message)
		return h, true, nil
	}
	done := h.done
	h.mu.Unlock()
	sender := trace.SpanContextFromContext(ctx)
	// A run that has just ended may still be finishing (delivering its
	// result, giving back its slot): the follow-up waits for that.
	select {
	case <-done:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("send to %s: %w", h.id, context.Cause(ctx))
	}
	history, err := h.history(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("send to %s: %w", h.id, err)
	}
	h.mu.Lock()
	h.sendSpan = sender
	h.mu.Unlock()
	if err := m.admit(m.limits().overflow == OverflowQueue, h); err != nil {
		if errors.Is(err, ErrBusy) && queue {
			// Another follow-up started the run first: this one now
			// joins it (queued, or steered) like any message to a
			// running subagent.
			return m.SendFollowUp(ctx, id, message, queue, steer)
		}
		return nil, false, fmt.Errorf("send to %s: %w", h.id, err)
	}
	if h.isQueued() {
		if err := h.recordQueued(context.WithoutCancel(ctx), false); err != nil {
			m.abandon(h, false)
			return nil, false, fmt.Errorf("send to %s: %w", h.id, err)
		}
	}
	m.wg.Go(func() { h.afterSlot(func() { h.runFrom(history, llm.UserText(message)) }) })
	return h, false, nil
}

// sendInCluster delivers a steer to a run on another process of the
// cluster, or a follow-up to a finished run through the job queue
// (done). A run active here goes the embedded way (not done).
func (m *Manager) sendInCluster(ctx context.Context, h *Handle, message string, steer bool) (done bool, err error) {
	h.mu.Lock()
	remote, final := h.remote, h.status.Final()
	h.mu.Unlock()
	switch {
	case remote && !final && steer:
		if err := m.opt.Dispatch.Control(ctx, Control{Op: ControlSteer, Run: h.id, Text: message}); err != nil {
			return true, fmt.Errorf("steer %s: %w", h.id, err)
		}
		return true, nil
	case remote && !final:
		return true, fmt.Errorf("send to %s: %w (it runs on a worker); steer it instead, or wait until it ends", h.id, ErrBusy)
	case final:
		return true, m.followUpRemote(ctx, h, message)
	}
	return false, nil
}

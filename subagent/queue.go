package subagent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

// Overflow is what happens to a spawn that arrives while every
// concurrency slot is taken (AVA_SPAWN_OVERFLOW).
type Overflow string

// Overflow policies. Members of a group (spawn_subagents) wait for a slot
// under either policy: a batch larger than the free slots runs as slots
// free up, inside the group's combined timeout and budget.
const (
	// OverflowRefuse refuses a single spawn or follow-up with ErrLimit
	// (the default, seed 003's clear refusal).
	OverflowRefuse Overflow = "refuse"
	// OverflowQueue lets single spawns and follow-ups wait in the queue
	// too, as queued runs.
	OverflowQueue Overflow = "queue"
)

// DefaultMaxQueued bounds the queue when Options.MaxQueued is unset.
const DefaultMaxQueued = 32

// ErrQueueFull means a spawn would have to wait but the queue of runs
// waiting for a slot is full. It is returned wrapped together with
// ErrLimit, so errors.Is(err, ErrLimit) holds for it too.
var ErrQueueFull = errors.New("the subagent queue is full")

// queuedSummary is the summary of a run that ended while it waited.
const queuedSummary = "never started: it ended while waiting for a free slot"

// admit takes a slot for each of hs in order while slots are free and
// no earlier run waits (FIFO), and queues the rest when mayQueue. It
// takes nothing and refuses when the rest may not queue (ErrLimit) or the
// queue cannot hold them all (ErrQueueFull): a group is admitted or
// queued whole, or refused whole. Every handle has its ID already (new
// ones from assignIDs); a follow-up is refused with ErrBusy while its run
// is active.
func (m *Manager) admit(mayQueue bool, hs ...*Handle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, h := range hs {
		if _, active := m.handles[h.id]; h.id != "" && active {
			return fmt.Errorf("send to %s: %w", h.id, ErrBusy)
		}
	}
	free := 0
	if len(m.queue) == 0 {
		free = max(m.limits().maxConcurrent-len(m.running), 0)
	}
	fit := min(free, len(hs))
	if over := len(hs) - fit; over > 0 {
		if err := m.canQueue(mayQueue, len(hs), over); err != nil {
			return err
		}
	}
	for i, h := range hs {
		m.handles[h.id] = h
		if i < fit {
			m.running[h.id] = h
			h.reset(lifecycle.Pending, nil)
			continue
		}
		h.reset(lifecycle.Queued, make(chan struct{}))
		m.queue = append(m.queue, h)
	}
	return nil
}

// canQueue reports why over of asked runs may not wait (caller holds
// m.mu).
func (m *Manager) canQueue(mayQueue bool, asked, over int) error {
	l := m.limits()
	if !mayQueue {
		return fmt.Errorf("spawn: %w: %d of %d running, %d more asked (the limit is AVA_MAX_CONCURRENT_SUBAGENTS=%d); wait for one to finish or stop one, or set AVA_SPAWN_OVERFLOW=queue to let spawns wait",
			ErrLimit, len(m.running), l.maxConcurrent, asked, l.maxConcurrent)
	}
	if len(m.queue)+over > l.maxQueued {
		return fmt.Errorf("spawn: %w: %w: %d of %d running and %d of %d waiting, %d more would wait (AVA_MAX_QUEUED_SUBAGENTS=%d); wait for some to finish or cancel queued ones",
			ErrLimit, ErrQueueFull, len(m.running), l.maxConcurrent, len(m.queue), l.maxQueued, over, l.maxQueued)
	}
	return nil
}

// reset readies h for a new run in status: not cancelled, a fresh done
// channel, and slot (closed when a queued run gets its slot).
func (h *Handle) reset(status lifecycle.Status, slot chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status, h.cancelled, h.slot, h.done = status, false, slot, make(chan struct{})
	if status == lifecycle.Queued {
		h.queuedAt = h.m.now()
	}
}

// admitWaiting gives free slots to the runs waiting longest (caller holds
// m.mu). Called whenever a slot frees, so a run never waits while a slot
// is free.
func (m *Manager) admitWaiting() {
	for !m.closed && len(m.queue) > 0 && len(m.running) < m.limits().maxConcurrent {
		h := m.queue[0]
		m.queue = slices.Delete(m.queue, 0, 1)
		m.running[h.id] = h
		close(h.slot)
	}
}

// leaveQueue takes h out of the queue if it is still there. A run that
// got its slot meanwhile keeps it until release.
func (m *Manager) leaveQueue(h *Handle) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.Index(m.queue, h); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
	}
}

// queuePosition is h's place in the queue, 1 for the next to start, 0
// when it does not wait.
func (m *Manager) queuePosition(h *Handle) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Index(m.queue, h) + 1
}

// isQueued reports whether h waits for a slot.
func (h *Handle) isQueued() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status == lifecycle.Queued
}

// waitSlot waits, without polling, until a queued run has a slot (nil)
// or its wait ends first: cancelled, the group's combined timeout, the
// manager closing. Then it leaves the queue and returns the cause; a slot
// granted in the same instant is given back by release, so the run never
// calls the model.
func (h *Handle) waitSlot() error {
	ctx, cancel := context.WithCancelCause(h.parentContext())
	defer cancel(nil)
	h.mu.Lock()
	slot := h.slot
	h.cancel = cancel
	if h.cancelled {
		cancel(agent.ErrCancelled)
	}
	h.mu.Unlock()
	select {
	case <-slot:
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		return nil
	}
	h.m.leaveQueue(h)
	return context.Cause(ctx)
}

// afterSlot runs fn once h holds a slot; a run that ends while it waits
// is recorded as ended with the wait's cause and fn never runs.
func (h *Handle) afterSlot(fn func()) {
	if h.isQueued() {
		if err := h.waitSlot(); err != nil {
			h.endQueued(err)
			return
		}
	}
	fn()
}

// endQueued records the end of a run that never left the queue, as any
// run's end is recorded (store, own stream, parent's stream, lifecycle
// file, delivery), then releases its place.
func (h *Handle) endQueued(cause error) {
	res := agent.Result{Status: agent.StatusOf(cause), Err: cause}
	h.mu.Lock()
	h.queue = nil
	from := h.queuedAt
	h.mu.Unlock()
	h.finish(res, 0, from)
	h.end()
}

// recordQueued writes a queued run's record (a new run) or moves a
// finished run back to queued (a follow-up), synced, before the spawn
// returns; a new run's queueing is also a subagent:queued lifecycle entry.
func (h *Handle) recordQueued(ctx context.Context, isNew bool) error {
	h.mu.Lock()
	from, at := h.stored, h.queuedAt
	h.mu.Unlock()
	var err error
	owner := h.claim(from)
	if isNew {
		err = h.m.opt.Store.CreateRun(ctx, h.storeRun(lifecycle.Queued, nil, owner))
	} else {
		err = h.m.opt.Store.TransitionRun(ctx, h.uuid, owner, []lifecycle.Status{from}, lifecycle.Queued, nil)
	}
	if err != nil {
		return fmt.Errorf("record queued run %s: %w", h.id, err)
	}
	h.held(owner, lifecycle.Queued)
	if isNew {
		ev := h.spawnEvent(event.SubagentQueued, h.m.queuePosition(h))
		ev = h.parentEvent(ev)
		ev.Time, ev.Fence = at, h.lease()
		if ev.Session != "" {
			if _, err := h.m.opt.Hub.Publish(ev); err != nil {
				h.m.log.Error("publish to parent session", "id", h.id, "type", ev.Type, "err", err)
			}
		}
	}
	return nil
}

// abandon undoes admit for a run that will not start (its queued record
// could not be written): its place or slot is freed, and a follow-up's
// handle is finished again as it was.
func (m *Manager) abandon(h *Handle, isNew bool) {
	h.mu.Lock()
	h.status = h.stored
	h.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.Index(m.queue, h); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
	}
	if m.running[h.id] == h {
		delete(m.running, h.id)
	}
	if isNew && m.handles[h.id] == h {
		delete(m.handles, h.id)
	} else {
		m.retire(h)
	}
	m.admitWaiting()
}

package subagent

import (
	"fmt"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

// watchdog flags subagents that show no sign of life (no model output and
// no tool progress) for StallAfter: slow is fine, stuck is flagged. A
// flagged subagent is not killed; the flag clears when it moves again.
func (m *Manager) watchdog() {
	m.every(max(m.opt.StallAfter/4, 10*time.Millisecond), m.checkStalls)
}

// every calls fn every d until the manager closes.
func (m *Manager) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// stopLost cancels the running turns of runs recorded under a lease this
// process lost (its instance registered again under a new ID after a
// pause past the TTL): another process took them over or ended them, so
// their model streams and tool processes stop now, not at their next
// step's ownership check.
func (m *Manager) stopLost() {
	if m.opt.Owner == nil {
		return
	}
	cur := m.ownerID()
	for _, h := range m.runningHandles() {
		h.mu.Lock()
		lost := h.owner != cur && h.owner != "" && h.cancel != nil && !h.remote
		cancel := h.cancel
		h.mu.Unlock()
		if lost {
			m.log.Warn("stopping a subagent this process lost (its lease was taken)", "id", h.id)
			cancel(fmt.Errorf("%w: it was recorded under a lease this process lost", agent.ErrNotOwner))
		}
	}
}

func (m *Manager) checkStalls() {
	m.stopLost()
	now := m.now()
	for _, h := range m.runningHandles() {
		snap := h.agentSnapshot()
		if snap.LastProgress.IsZero() {
			continue
		}
		idle := now.Sub(snap.LastProgress)
		h.mu.Lock()
		running := h.status == lifecycle.Running
		was := h.stalled
		h.stalled = running && !h.waiting && idle >= m.opt.StallAfter
		flagged := h.stalled && !was
		h.mu.Unlock()
		if flagged {
			ev := event.New(event.Stalled, event.StalledContent{IdleMs: idle.Milliseconds()})
			ev.Session, ev.Agent = h.SessionKey(), h.id
			if _, err := m.opt.Hub.Publish(ev); err != nil {
				m.log.Error("publish stall", "id", h.id, "err", err)
			}
			m.log.Warn("subagent stalled", "id", h.id, "idle", idle.Round(time.Second))
		}
	}
}

// runningHandles is a snapshot of the runs holding a slot.
func (m *Manager) runningHandles() []*Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	hs := make([]*Handle, 0, len(m.running))
	for _, h := range m.running {
		hs = append(hs, h)
	}
	return hs
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

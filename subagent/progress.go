package subagent

import (
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

// progressLoop tells each parent how its long-running subagents are
// doing (seed 000 section 1.3): once a subagent has run ProgressAfter, and
// then every ProgressEvery, a SubagentProgress event (live-only) goes to
// its parent's stream, which every channel shows as "⏳ Subagent still
// working: …".
func (m *Manager) progressLoop() {
	m.every(min(m.opt.ProgressAfter, m.opt.ProgressEvery)/2, m.notifyProgress)
}

// notifyProgress publishes the notices that are due.
func (m *Manager) notifyProgress() {
	now := m.now()
	for _, h := range m.runningHandles() {
		if ev, ok := h.progressDue(now, m.opt.ProgressAfter, m.opt.ProgressEvery); ok {
			m.opt.Hub.PublishAsync(h.parentEvent(ev), nil)
		}
	}
}

// progressDue returns the run's progress notice if one is due at now.
func (h *Handle) progressDue(now time.Time, after, every time.Duration) (event.Event, bool) {
	if h.req.Parent.SessionKey == "" {
		return event.Event{}, false
	}
	st := h.Status()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status != lifecycle.Running || h.startedAt.IsZero() {
		return event.Event{}, false
	}
	elapsed := now.Sub(h.startedAt)
	if elapsed < after || (!h.progressAt.IsZero() && now.Sub(h.progressAt) < every) {
		return event.Event{}, false
	}
	h.progressAt = now
	return event.New(event.SubagentProgress, event.SubagentProgressContent{SubagentID: h.id, Role: h.role.Name,
		Activity: st.Activity, ElapsedMs: st.Elapsed.Milliseconds(), Tokens: st.Tokens, CostCents: st.CostCents,
		Stalled: st.Stalled}), true
}

package subagent

import (
	"maps"
	"time"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/role"
)

// roleSet is the roles a Manager spawns with and each one's tools, built
// together: an immutable snapshot that SetRoles swaps whole, so a spawn
// sees one set or the other, never a mix. A run keeps the role it
// started with (its Handle holds it); only new spawns see a new set.
type roleSet struct {
	roles map[string]role.Role
	tools map[string]roleToolSet
}

// newRoleSet builds the snapshot of roles for m (a copy: the caller's
// map may change afterwards).
func (m *Manager) newRoleSet(roles map[string]role.Role) *roleSet {
	s := &roleSet{roles: maps.Clone(roles), tools: make(map[string]roleToolSet, len(roles))}
	for name, r := range s.roles {
		reg, err := buildRoleTools(m.opt.Tools, r, askUser{m})
		s.tools[name] = roleToolSet{reg, err}
	}
	return s
}

// roleSet returns the roles in force.
func (m *Manager) roleSet() *roleSet { return m.roles.Load() }

// SetRoles replaces the roles new spawns (and resumed runs) are made
// of, atomically: runs already going keep theirs.
func (m *Manager) SetRoles(roles map[string]role.Role) { m.roles.Store(m.newRoleSet(roles)) }

// limits are the Manager's slot and queue limits and its overflow
// policy, an immutable snapshot SetLimits swaps.
type limits struct {
	maxConcurrent, maxQueued int
	overflow                 Overflow
}

// limits returns the limits in force.
func (m *Manager) limits() limits { return *m.lims.Load() }

// SetLimits changes the limit on running subagents, the bound of the
// queue and the overflow policy (zero values keep the current ones).
// Runs above a lowered limit keep their slots; a raised limit starts
// the runs waiting at once. The overflow policy must be OverflowRefuse
// or OverflowQueue.
func (m *Manager) SetLimits(maxConcurrent, maxQueued int, overflow Overflow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.limits()
	if maxConcurrent > 0 {
		l.maxConcurrent = maxConcurrent
	}
	if maxQueued > 0 {
		l.maxQueued = maxQueued
	}
	if overflow == OverflowRefuse || overflow == OverflowQueue {
		l.overflow = overflow
	}
	m.lims.Store(&l)
	m.admitWaiting()
}

// SetConfirm changes the confirmation policy of the spawns proposed
// from now on and how long their proposals wait (0 keeps the current
// wait). Proposals already made keep their expiry.
func (m *Manager) SetConfirm(p confirm.Policy, timeout time.Duration) {
	m.props.setPolicy(p, timeout)
}

// confirmRule is the proposals' policy and wait, an immutable snapshot
// setPolicy swaps.
type confirmRule struct {
	policy  confirm.Policy
	timeout time.Duration
}

// rule returns the policy and wait in force.
func (pp *proposals) rule() confirmRule { return *pp.conf.Load() }

// setPolicy swaps the policy and wait (a non-positive wait keeps the
// current one).
func (pp *proposals) setPolicy(p confirm.Policy, timeout time.Duration) {
	r := confirmRule{policy: p, timeout: timeout}
	if timeout <= 0 {
		r.timeout = pp.rule().timeout
	}
	pp.conf.Store(&r)
}

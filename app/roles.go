package app

import (
	"context"

	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/role"
)

// Role is a subagent role as the instance loaded it (role.Role).
type Role = role.Role

// Roles returns the instance's subagent roles, built-in and custom,
// sorted by name.
func (in *Instance) Roles() []Role { return role.Sorted(in.Subagent.Roles()) }

// BuiltinRoleNames lists the built-in roles' names (shell completion).
func BuiltinRoleNames() []string {
	var names []string
	for _, r := range role.Builtin() {
		names = append(names, r.Name)
	}
	return names
}

// WithheldReason says why no subagent ever gets the named tool, or ""
// when a role may give it to its subagents.
func WithheldReason(toolName string) string { return role.WithheldReason(toolName) }

// RoleStats is one role's past runs (count, median time and cost) and
// how often the estimates made before they were spawned held
// (estimate.RoleStats).
type RoleStats = estimate.RoleStats

// RoleStats returns every role's statistics from the runs in the store,
// in role order (`ava roles --stats`).
func (in *Instance) RoleStats(ctx context.Context) ([]RoleStats, error) {
	return in.Subagent.Stats(ctx)
}

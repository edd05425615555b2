package ava

import (
	"context"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/role"
)

// Role is a subagent role: its tools, model, limits and prompt.
type Role = role.Role

// RoleStats is one role's past runs (count, median time and cost) and
// how often the estimates made before they were spawned held.
type RoleStats = estimate.RoleStats

// Roles returns the runtime's roles (built-in, the program's, and the
// role files'), sorted by name.
func (r *Runtime) Roles() []Role { return r.in.Roles() }

// RoleStats returns every role's statistics from the runs in the store.
func (r *Runtime) RoleStats(ctx context.Context) ([]RoleStats, error) { return r.in.RoleStats(ctx) }

// RoleMCPTools starts the role's MCP servers and lists the tools a
// subagent of the role gets from them, with an error naming each server
// that failed.
func (r *Runtime) RoleMCPTools(ctx context.Context, role Role) ([]string, error) {
	return r.in.RoleMCPTools(ctx, role)
}

// MCPServer is a configured MCP server: its state in this process and
// the roles that use it.
type MCPServer = app.MCPServer

// MCPServers lists the MCP servers of config.yaml and of the roles.
func (r *Runtime) MCPServers() []MCPServer { return r.in.MCPServers() }

// StartMCPServers starts the named servers (all when none are named) so
// that their tools can be listed; they stop at Close.
func (r *Runtime) StartMCPServers(ctx context.Context, names ...string) error {
	return r.in.StartMCPServers(ctx, names...)
}

package ava

import (
	"context"
	"fmt"
	"slices"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/subagent"
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

// MCPServerState is an MCP server's state in this process.
type MCPServerState = mcpclient.State

// MCPServerRunning is the state of a started MCP server.
const MCPServerRunning = app.MCPStateRunning

// BuiltinRoleNames lists the built-in roles' names (for shell
// completion, without opening a runtime).
func BuiltinRoleNames() []string { return app.BuiltinRoleNames() }

// WithheldReason says why no subagent ever gets the named tool (a
// role may list it, but the hierarchy rule withholds it), or "" when a
// role may give it to its subagents.
func WithheldReason(toolName string) string { return app.WithheldReason(toolName) }

// SandboxSummary says in one line which sandbox protections the process
// tools (run_bash, python_exec) have in this runtime on this machine.
func (r *Runtime) SandboxSummary() string { return r.in.SandboxSummary() }

// ReportSandbox logs which protections the process tools have on this
// machine (a warning when they are missing). A daemon calls it at start;
// other commands find out on their first process tool call.
func (r *Runtime) ReportSandbox() { r.in.ReportSandbox() }

// WorkspaceTrust is what the person trusted of workspace ws (`ava
// trust`) and how its role files differ from it now: trusted reports
// whether it is trusted at all; changes lists its role files that are
// new, changed or removed since; now is every role file's hash, as `ava
// trust` records it.
func WorkspaceTrust(cfg config.Config, ws string) (trusted bool, changes []config.FileChange, now map[string]string, err error) {
	return app.WorkspaceTrust(cfg, ws)
}

// The messages of the warnings Open logs for each role file it skips and
// each role that replaces another: a front end that reports these itself
// (Runtime.RoleErrors, Role.Overrides) may drop the log records.
const (
	RoleSkippedMessage  = app.RoleSkippedMessage
	RoleOverrideMessage = app.RoleOverrideMessage
)

// RoleSearch says which web search a subagent of the role gets on the
// role's own model, by the web_search setting: a configured backend
// (Ava's web_search), the provider's own search, or none. It is "" for
// a role without web_search.
func (r *Runtime) RoleSearch(role Role) string {
	if !slices.Contains(role.Tools, subagent.SearchTool) {
		return ""
	}
	m, err := r.in.Catalog.ResolveAs(role.Model, role.ModelBy)
	if err != nil {
		return "unknown: the role's model " + role.Model + " does not resolve"
	}
	s := r.in.Subagent.SearchFor(role, m)
	if s.Server == nil {
		return s.Via
	}
	what := s.Via
	if s.Server.WebFetch {
		what += " and web fetch"
	}
	if s.Server.MaxUses == 1 {
		return what + ", run by the provider (at most one search a model call)"
	}
	return fmt.Sprintf("%s, run by the provider (up to %d searches a model call)", what, s.Server.MaxUses)
}

package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/tool"
)

// mcpOptions configure the pool of MCP servers: each stdio server in its
// own folder under <data root>/mcp, in the process sandbox (unless
// AVA_SANDBOX=off or its sandbox: false) with the workspace, the data
// root hidden, and the process tools' egress proxy for network: true.
func (in *Instance) mcpOptions(cfg config.Config, log *slog.Logger) mcpclient.Options {
	sh := in.shellConfig()
	return mcpclient.Options{Servers: cfg.MCPServers, AllowHosts: cfg.MCPAllowedHosts, IdleTimeout: cfg.MCPIdleTimeout,
		Withhold: role.WithheldReason, Workspace: cfg.Workspace, StateDir: filepath.Join(cfg.DataRoot, "mcp"),
		SandboxOff: sh.SandboxOff, Hide: sh.Hide, EgressGuard: sh.EgressGuard, EgressAllow: sh.EgressAllow, Logger: log}
}

// addRoleMCPServers checks the roles' MCP servers against the pool:
// a name must be a server of config.yaml, and a role's own definition
// is added to the pool (shared with another role defining it the same
// way, refused if defined differently). A role whose servers do not
// check out is removed from roles, with an error naming the server and
// the role file.
func (in *Instance) addRoleMCPServers(cfg config.Config, pool *mcpclient.Pool, roles map[string]role.Role) []error {
	var errs []error
	for _, r := range role.Sorted(roles) {
		for _, sp := range r.MCPServers {
			var err error
			if keys := sp.OperatorOnly(); len(keys) > 0 && in.workspaceRole(r) {
				err = fmt.Errorf("mcp_servers: MCP server %s: %s may only be set in %s or a role in the data root, not in a workspace's role file (its servers always run in the sandbox)",
					sp.Name, strings.Join(keys, ", "), configSource(cfg))
			} else if sp.IsRef() {
				if !pool.Has(sp.Name) {
					err = fmt.Errorf("mcp_servers: MCP server %s is not defined in %s (mcp_servers) nor here", sp.Name, configSource(cfg))
				}
			} else if err = pool.Add(sp); err != nil {
				err = fmt.Errorf("mcp_servers: %w (a role's own server must match any other definition of the same name)", err)
			}
			if err != nil {
				errs = append(errs, &role.FileError{Path: r.Source, Err: err})
				delete(roles, r.Name)
				break
			}
		}
	}
	return errs
}

// workspaceRole reports whether the role comes from the workspace's
// .ava/agents.
func (in *Instance) workspaceRole(r role.Role) bool {
	if in.Config.Workspace == "" || r.Source == "" || r.Source == role.BuiltinSource || r.Source == LibrarySource {
		return false
	}
	dir := filepath.Join(in.Config.Workspace, ".ava")
	src := filepath.Clean(r.Source)
	return src == dir || strings.HasPrefix(src, dir+string(filepath.Separator))
}

// configSource names the config file for messages.
func configSource(cfg config.Config) string {
	if cfg.Source != "" {
		return cfg.Source
	}
	return "config.yaml"
}

// roleMCPTools are the tools of a role's MCP servers (their servers
// start on first use).
func (in *Instance) roleMCPTools(ctx context.Context, r role.Role) ([]tool.Tool, error) {
	return in.MCP.Tools(ctx, r.MCPServerNames())
}

// MCPServerStatus is one MCP server as this process sees it
// (mcpclient.Status).
type MCPServerStatus = mcpclient.Status

// MCPServer is a configured MCP server: its state in this process and
// the roles that use it.
type MCPServer struct {
	MCPServerStatus
	Roles []string
}

// MCPServers lists the MCP servers of config.yaml and of the roles, as
// this process sees them, with the roles using each.
func (in *Instance) MCPServers() []MCPServer {
	var out []MCPServer
	for _, st := range in.MCP.Status() {
		s := MCPServer{MCPServerStatus: st}
		for _, r := range in.Roles() {
			if slices.Contains(r.MCPServerNames(), st.Name) {
				s.Roles = append(s.Roles, r.Name)
			}
		}
		out = append(out, s)
	}
	return out
}

// StartMCPServers starts the named servers (all when names is empty),
// as a first use would, so that their tools can be listed; the error
// names each server that failed. They stop at Close.
func (in *Instance) StartMCPServers(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		for _, st := range in.MCP.Status() {
			names = append(names, st.Name)
		}
	}
	_, err := in.MCP.Tools(ctx, names)
	return err
}

// RoleMCPTools starts the role's MCP servers and lists the tools a
// subagent of the role gets from them (those named like a tool no
// subagent may have are withheld), with an error naming each server
// that failed.
func (in *Instance) RoleMCPTools(ctx context.Context, r Role) ([]string, error) {
	tools, err := in.roleMCPTools(ctx, r)
	var names []string
	for _, t := range tools {
		if role.WithheldReason(t.Name()) == "" {
			names = append(names, t.Name())
		}
	}
	return names, err
}

// MCPStateRunning is the state of a running server.
const MCPStateRunning = mcpclient.StateRunning

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/mcpserver"
)

func newMCPCmd(a *App) *cobra.Command {
	var offline bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve Ava's subagent tools to an MCP client over stdin and stdout",
		Long: `Serve Ava as a Model Context Protocol server over stdio, for an MCP client
(Claude Desktop, Claude Code, an IDE) that starts it as a command. The tools:
spawn_subagent, spawn_subagents, subagent_status, list_subagents,
cancel_subagent, send_subagent and read_ava_logs; the roles are resources
(ava://roles/<name>). Subagents run in this process, on the data root, with
the same roles, limits, confirmation policy (AVA_CONFIRM) and logs as
everywhere else; they stop when the client disconnects.

Stdout carries only the protocol; logs go to stderr. The daemon (ava serve) serves the same tools over streamable HTTP at /mcp.`,
		Example: `  # a client's configuration (Claude Desktop's claude_desktop_config.json):
  {"mcpServers": {"ava": {"command": "ava", "args": ["mcp"]}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			cfg, _ = a.chooseModel(cfg, offline, "")
			rt, err := ava.Open(cmd.Context(), ava.Options{Config: cfg, Logger: a.Logger()})
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, rt.Close()) }()
			srv, err := mcpserver.New(mcpserver.Options{Runtime: rt, User: a.Getenv("USER"), Logger: a.Logger()})
			if err != nil {
				return err
			}
			return srv.Serve(cmd.Context(), a.Stdin, a.Stdout)
		},
	}
	addOfflineFlag(cmd, &offline)
	cmd.AddCommand(newMCPListCmd(a))
	return cmd
}

func newMCPListCmd(a *App) *cobra.Command {
	var check, daemon bool
	cmd := &cobra.Command{
		Use:   "list [--check | --daemon]",
		Short: "List the MCP servers roles use (config.yaml's and the roles' own) and their state",
		Long: `List the MCP servers subagents' roles may use: those of config.yaml's
mcp_servers and those a role file defines, with their kind (stdio or url),
command or URL, how it is confined (SANDBOX: sandboxed, with or without
network; UNSANDBOXED when its definition says sandbox: false or
AVA_SANDBOX=off, each such server also named in a warning on stderr), the
roles using each, and their state in this process.

Each Ava process (ava serve, ava mcp, ava run, ava chat) has its own servers,
started when a subagent first uses them, so without --check every server is
"not started" here. --daemon shows them as the daemon at AVA_ADDR has them
instead (running or not, their PIDs and tools). --check starts each server
as a first use would, lists its tools (or why it failed) and stops it
again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if daemon {
				if check {
					return errors.New("--check starts the servers in this process; it does not go with --daemon")
				}
				return listDaemonMCPServers(cmd.Context(), a)
			}
			in, err := a.openRoles(cmd.Context())
			if err != nil {
				return err
			}
			defer in.Close()
			var failed error
			if check {
				failed = in.StartMCPServers(cmd.Context())
			}
			return printMCPServers(a, in.MCPServers(), check, false, failed)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "start each server, list its tools, then stop it")
	cmd.Flags().BoolVar(&daemon, "daemon", false, "show the servers' state in the daemon at AVA_ADDR")
	return cmd
}

// listDaemonMCPServers prints the servers as the daemon has them.
func listDaemonMCPServers(ctx context.Context, a *App) error {
	c, err := a.daemon()
	if err != nil {
		return err
	}
	list, err := c.MCPServers(ctx)
	if err != nil {
		return daemonError(c, err)
	}
	servers := make([]ava.MCPServer, 0, len(list))
	for _, m := range list {
		var s ava.MCPServer
		s.Roles, s.Name, s.Kind, s.Target, s.State, s.PID = m.Roles, m.Name, m.Kind, m.Target, ava.MCPServerState(m.State), m.PID
		s.Tools, s.Withheld, s.Starts, s.Err, s.Confinement = m.Tools, m.Withheld, m.Starts, m.Error, m.Confinement
		servers = append(servers, s)
	}
	if err := printMCPServers(a, servers, false, true, nil); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "\nstate in the daemon at %s\n", c.Addr())
	return nil
}

// printMCPServers writes the servers table; with check, their tools and
// failures too (a failure makes the exit status 1). remote is set for a
// daemon's servers, which shows PIDs.
func printMCPServers(a *App, servers []ava.MCPServer, check, remote bool, failed error) error {
	if len(servers) == 0 {
		fmt.Fprintln(a.Stdout, "no MCP servers: define them in config.yaml's mcp_servers or in a role's front matter (see docs/mcp.md, MCP servers for roles)")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tKIND\tCOMMAND OR URL\tSANDBOX\tROLES\tSTATE\tTOOLS")
	for _, s := range servers {
		roles := strings.Join(s.Roles, ",")
		if roles == "" {
			roles = "-"
		}
		tools := "-"
		if len(s.Tools) > 0 {
			tools = strings.Join(s.Tools, ",")
		}
		state := string(s.State)
		if check && s.State == ava.MCPServerRunning {
			state = "ok (started; stopped on exit)"
		}
		if remote && s.PID != 0 {
			state += fmt.Sprintf(" (pid %d)", s.PID)
		}
		if s.Err != "" {
			state += ": " + s.Err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, s.Target, confinementShort(s.Confinement), roles, state, tools)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write MCP servers: %w", err)
	}
	warnUnsandboxed(a, servers)
	for _, s := range servers {
		if len(s.Withheld) > 0 {
			fmt.Fprintf(a.Stdout, "%s: withheld: %s\n", s.Name, strings.Join(s.Withheld, "; "))
		}
	}
	if !check && !remote {
		fmt.Fprintln(a.Stdout, "\nstate in this process; each Ava process starts a server when a subagent first uses it (--check starts them now, --daemon shows the daemon's)")
	}
	if failed != nil {
		return failed
	}
	return nil
}

// confinementShort is the SANDBOX column: the confinement up to its
// first colon ("UNSANDBOXED (sandbox: false)", "sandboxed, no network").
func confinementShort(c string) string {
	if c == "" {
		return "-"
	}
	if i := strings.Index(c, "): "); i >= 0 {
		return c[:i+1]
	}
	if i := strings.Index(c, ": "); i >= 0 {
		return c[:i]
	}
	return c
}

// warnUnsandboxed names on stderr, loudly, each stdio server that runs
// unconfined or cannot start for want of the sandbox.
func warnUnsandboxed(a *App, servers []ava.MCPServer) {
	for _, s := range servers {
		if strings.HasPrefix(s.Confinement, "UNSANDBOXED") || strings.Contains(s.Confinement, "UNAVAILABLE") {
			fmt.Fprintf(a.Stderr, "WARNING: MCP server %s: %s\n", s.Name, s.Confinement)
		}
	}
}

package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/gateway"
	"github.com/avaagent/ava/mcpserver"
)

func newMCPCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve Ava's subagent tools to an MCP client over stdin and stdout",
		Long: `Serve Ava as a Model Context Protocol server over stdio, for an MCP client
(Claude Desktop, Claude Code, an IDE) that starts it as a command. The tools:
spawn_subagent, spawn_subagents, subagent_status, list_subagents,
cancel_subagent, send_subagent and read_ava_logs; the roles are resources
(ava://roles/<name>). Subagents run in this process, on the data root, with
the same roles, limits, confirmation policy (AVA_CONFIRM) and logs as
everywhere else; they stop when the client disconnects.

Stdout carries only the protocol; logs go to stderr. With no model provider
configured the subagents use the offline scripted model, and stderr says so.
The daemon (ava serve) serves the same tools over streamable HTTP at /mcp.`,
		Example: `  # a client's configuration (Claude Desktop's claude_desktop_config.json):
  {"mcpServers": {"ava": {"command": "ava", "args": ["mcp"]}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			cfg, offline := gateway.Offline(cfg)
			if offline {
				fmt.Fprintf(a.Stderr, "[offline] no model provider is configured: subagents use the offline scripted model %s (not a real model)\n", gateway.OfflineModel)
			}
			in, err := app.Open(cmd.Context(), cfg, a.Logger())
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, in.Close()) }()
			srv, err := mcpserver.New(mcpserver.Options{Instance: in, User: a.Getenv("USER"), Logger: a.Logger()})
			if err != nil {
				return err
			}
			return srv.Serve(cmd.Context(), a.Stdin, a.Stdout)
		},
	}
}

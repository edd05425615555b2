package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava/config"
)

// newTrustCmd builds `ava trust [PATH]`: it adds a workspace to the
// config file's trusted_workspaces (or removes it with --remove).
func newTrustCmd(a *App) *cobra.Command {
	var remove, list bool
	cmd := &cobra.Command{
		Use:   "trust [PATH]",
		Short: "Let a workspace's role files replace built-in and user roles",
		Long: `Mark a workspace as trusted, so that role files in its .ava/agents/ may
replace a built-in role or one of yours in $AVA_DATA_ROOT/agents/ of the same
name (ava roles then shows the override). Roles of an untrusted workspace
may only add new role names; one that would replace a role is skipped with
a warning. PATH defaults to the workspace (AVA_WORKSPACE or the current
folder). The list is kept in $AVA_DATA_ROOT/config.yaml
(trusted_workspaces); AVA_TRUSTED_WORKSPACES adds to it.

Trust only a repository whose .ava/agents/ you have read: a role file sets
a subagent's tools, limits and instructions.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if list {
				for _, w := range cfg.TrustedWorkspaces {
					fmt.Fprintln(a.Stdout, w)
				}
				return nil
			}
			path := cfg.Workspace
			if len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				if path, err = os.Getwd(); err != nil {
					return fmt.Errorf("trust: no workspace given and no current folder: %w", err)
				}
			}
			return runTrust(a, cfg, path, !remove)
		},
	}
	cmd.Flags().BoolVar(&remove, "remove", false, "stop trusting the workspace")
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted workspaces")
	return cmd
}

// runTrust records the choice and says what it means.
func runTrust(a *App, cfg config.Config, path string, trusted bool) error {
	ws, changed, err := config.SetTrusted(cfg.DataRoot, path, trusted)
	if err != nil {
		return err
	}
	switch {
	case trusted && changed:
		fmt.Fprintf(a.Stdout, "trusted %s: role files in its .ava/agents/ may now replace built-in and user roles (ava roles shows any override)\n", ws)
	case trusted:
		fmt.Fprintf(a.Stdout, "%s is already trusted\n", ws)
	case changed:
		fmt.Fprintf(a.Stdout, "no longer trusted: %s\n", ws)
	default:
		fmt.Fprintf(a.Stdout, "%s was not trusted in %s (AVA_TRUSTED_WORKSPACES may still list it)\n", ws, cfg.DataRoot)
	}
	return nil
}

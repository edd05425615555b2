package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
)

// newTrustCmd builds `ava trust [PATH]`: it adds a workspace to the
// config file's trusted_workspaces (or removes it with --remove).
func newTrustCmd(a *App) *cobra.Command {
	var remove, list bool
	cmd := &cobra.Command{
		Use:   "trust [PATH]",
		Short: "Trust a workspace's role files as they are now",
		Long: `Trust a workspace's role files (.ava/agents/*.md) as they are now: Ava
records each file's SHA-256 beside the workspace in $AVA_DATA_ROOT/config.yaml
(trusted_workspaces). A trusted file loads as written and may replace a
built-in role or one of yours in $AVA_DATA_ROOT/agents/ of the same name (ava
roles then shows the override).

Trust binds to content, not to the path: a role file that is new or changed
since (a command run in the workspace may have written it) is untrusted
again until you run ava trust once more, which lists what changed (new,
changed, removed) before it records the files anew. An untrusted role file
only adds a new role name, and loads limited: no run_bash, python_exec,
memory or MCP servers, no network, no scripted model, limits no higher
than the researcher's (ava roles shows what was withheld). One that would
replace a role is skipped with a warning. PATH defaults to the workspace
(AVA_WORKSPACE or the current folder). AVA_TRUSTED_WORKSPACES adds paths
without contents: their files stay untrusted until ava trust records them,
as do those of an entry written before contents were recorded.

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
					fmt.Fprintf(a.Stdout, "%s\t%d file(s) trusted\n", w.Path, len(w.Files))
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
			if len(args) == 0 {
				fmt.Fprintf(a.Stderr, "no PATH given: the workspace %s (AVA_WORKSPACE, else the current folder)\n", path)
			}
			return runTrust(a, cfg, path, !remove)
		},
	}
	cmd.Flags().BoolVar(&remove, "remove", false, "stop trusting the workspace")
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted workspaces")
	return cmd
}

// runTrust records the choice (with the role files' hashes) and says
// what it means and what changed since the last time.
func runTrust(a *App, cfg config.Config, path string, trusted bool) error {
	var files map[string]string
	if trusted {
		was, changes, now, err := ava.WorkspaceTrust(cfg, path)
		if err != nil {
			return fmt.Errorf("trust %s: %w", path, err)
		}
		if was {
			printTrustChanges(a, changes)
		}
		files = now
	}
	ws, changed, err := config.SetTrusted(cfg.DataRoot, path, trusted, files)
	if err != nil {
		return err
	}
	file := filepath.Join(cfg.DataRoot, config.FileName)
	switch {
	case trusted && changed:
		fmt.Fprintf(a.Stdout, "trusted %s with its %d role file(s) as they are now, recorded in %s (trusted_workspaces): they may replace built-in and user roles (ava roles shows any override); a file changed or added later is untrusted until you run ava trust again\n", ws, len(files), file)
	case trusted:
		fmt.Fprintf(a.Stdout, "%s is already trusted; its role files have not changed\n", ws)
	case changed:
		fmt.Fprintf(a.Stdout, "no longer trusted: %s (removed from %s)\n", ws, file)
	default:
		fmt.Fprintf(a.Stdout, "%s was not trusted in %s (AVA_TRUSTED_WORKSPACES may still list it)\n", ws, cfg.DataRoot)
	}
	return nil
}

// printTrustChanges lists the role files that differ from what was
// trusted.
func printTrustChanges(a *App, changes []config.FileChange) {
	if len(changes) == 0 {
		return
	}
	fmt.Fprintln(a.Stdout, "changed since the workspace was last trusted:")
	for _, c := range changes {
		fmt.Fprintf(a.Stdout, "  %-8s %s\n", c.Kind, c.Path)
	}
}

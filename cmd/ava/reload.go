package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/gateway/client"
)

func newReloadCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "reload",
		Short: "Make the running daemon read config.yaml and the role files again",
		Long: `Ask the daemon at AVA_ADDR to read config.yaml and the role files
($AVA_DATA_ROOT/agents/, the workspace's .ava/agents/) again, check them,
and apply what may change while it runs: roles, hooks, MCP servers, the
Telegram allow-list, the confirmation policy and the limits on running
and queued subagents. The daemon also does this by itself when the files
change, and on SIGHUP.

It prints what changed. A bad configuration changes nothing: the daemon
keeps running what it ran, and ava reload prints what is wrong (the file,
the line, the setting) and exits 1. A changed setting that only a restart
applies (addr, model, workspace, …) is listed as needing a restart.
See docs/configuration.md#what-a-running-daemon-reloads.`,
		Example: `  ava reload
  kill -HUP $(pidof ava)   # the same, by signal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.daemon()
			if err != nil {
				return withHint(err, "the daemon keeps its running configuration; fix the file and run ava reload again")
			}
			out, err := c.Reload(cmd.Context())
			if client.IsStatus(err, 400) {
				return withHint(fmt.Errorf("the daemon kept its running configuration: %w", err), "fix the file and save it (the daemon reloads by itself) or run ava reload again")
			}
			if err != nil {
				return daemonError(c, err)
			}
			printReloaded(a, c.Addr(), out)
			return nil
		},
	}
}

// printReloaded says what a reload changed.
func printReloaded(a *App, addr string, out client.Reloaded) {
	var lines []string
	for _, ch := range out.Changes {
		lines = append(lines, ch.Message)
	}
	list := func(what string, names []string) {
		if len(names) > 0 {
			lines = append(lines, what+": "+strings.Join(names, ", "))
		}
	}
	list("roles added", out.RolesAdded)
	list("roles changed", out.RolesChanged)
	list("roles removed", out.RolesRemoved)
	list("MCP servers added, changed or removed", out.MCPServers)
	if len(lines) == 0 {
		fmt.Fprintf(a.Stdout, "ava reload: the daemon at %s read its configuration again: nothing changed\n", addr)
	} else {
		fmt.Fprintf(a.Stdout, "ava reload: the daemon at %s read its configuration again:\n", addr)
		for _, l := range lines {
			fmt.Fprintln(a.Stdout, "  "+l)
		}
	}
	for _, e := range out.RoleErrors {
		fmt.Fprintf(a.Stderr, "warning: role file not loaded (its previous version stays): %s\n", e)
	}
	for _, r := range out.Restart {
		fmt.Fprintf(a.Stderr, "note: %s (ava serve reads it only at start)\n", r)
	}
}

// daemonLoader reads the daemon's configuration again as serve read it
// at the start: config.yaml and the environment, then serve's flags,
// the offline model when no provider is configured, and the token it
// serves with.
func daemonLoader(a *App, o serveOptions, token string) func() (config.Config, error) {
	return func() (config.Config, error) {
		cfg, err := a.loadConfig()
		if err != nil {
			return cfg, err
		}
		cfg = o.override(cfg)
		cfg, _ = ava.Offline(cfg)
		cfg.Token = token
		return cfg, nil
	}
}

// watchDaemon reloads rt's configuration when its files change and on
// SIGHUP, until ctx ends; the returned func stops both and waits for
// them.
func watchDaemon(ctx context.Context, a *App, rt *ava.Runtime) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	wg.Go(func() {
		if err := rt.WatchConfig(ctx); err != nil && !errors.Is(err, context.Canceled) {
			a.Logger().Warn("config.yaml and the role files are not watched: reload with ava reload or SIGHUP", "err", err)
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_, _ = rt.Reload(ctx) // logged and kept in the reload status
			}
		}
	})
	return func() {
		signal.Stop(hup)
		cancel()
		wg.Wait()
	}
}

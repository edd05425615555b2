package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

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
			// Not validated here: the daemon checks the file, and
			// says what is wrong, naming the line.
			cfg, err := a.loadConfig()
			if err != nil {
				return withHint(err, "the daemon keeps its running configuration; fix the file and run ava reload again")
			}
			c, err := daemonOf(cfg)
			if err != nil {
				return err
			}
			out, err := c.Reload(cmd.Context())
			if client.IsStatus(err, 400) {
				return withHint(fmt.Errorf("the daemon kept its running configuration: %w", err), "fix the file and save it (the daemon reloads by itself) or run ava reload again")
			}
			if err != nil {
				return daemonError(c, err)
			}
			printReloaded(a, strings.TrimPrefix(c.Addr(), "http://"), out)
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

// watchDaemon reloads rt's configuration on SIGHUP and, with files,
// when its files change, until ctx ends; the returned func stops both
// and waits for them.
func watchDaemon(ctx context.Context, a *App, rt *ava.Runtime, files bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if files {
		wg.Go(func() {
			if err := rt.WatchConfig(ctx); err != nil && !errors.Is(err, context.Canceled) {
				a.Logger().Warn("config.yaml and the role files are not watched: reload with ava reload or SIGHUP", "err", err)
			}
		})
	}
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

// daemonView is the daemon at AVA_ADDR when one answers with this data
// root's token, for the commands that show what the daemon runs (ava
// roles, ava hooks) rather than the files. ok is false when none
// answers (the command reads the files, silently) or one refuses (it
// reads the files and says why on stderr).
func (a *App) daemonView(ctx context.Context, call func(ctx context.Context, c *client.Client) error) (addr string, ok bool) {
	c, err := a.daemon()
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, daemonViewTimeout)
	defer cancel()
	if err := call(ctx, c); err != nil {
		if !errors.Is(err, client.ErrNoDaemon) {
			fmt.Fprintf(a.Stderr, "note: the daemon at %s did not answer (%v): showing the files instead\n", c.Addr(), err)
		}
		return c.Addr(), false
	}
	return strings.TrimPrefix(c.Addr(), "http://"), true
}

// daemonViewTimeout bounds the daemon's answer to ava roles and ava
// hooks before they read the files instead.
const daemonViewTimeout = 5 * time.Second

// printDaemonRoles writes the roles the daemon runs, when one answers;
// it reports whether it did.
func printDaemonRoles(ctx context.Context, a *App) bool {
	var list client.RoleList
	addr, ok := a.daemonView(ctx, func(ctx context.Context, c *client.Client) (err error) {
		list, err = c.Roles(ctx)
		return err
	})
	if !ok {
		return false
	}
	fmt.Fprintf(a.Stdout, "Roles the daemon at %s runs (after its last reload; with no daemon, ava roles reads the files):\n\n", addr)
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tSOURCE\tMODEL\tTIMEOUT\tMAX COST\tMAX TOKENS\tMAX ITER\tTOOLS")
	for _, r := range list.Roles {
		src := r.Source
		switch {
		case r.Untrusted:
			src += " (UNTRUSTED: " + r.UntrustedWhy + ")"
		case r.Overrides != "":
			src += " (OVERRIDES " + r.Overrides + ")"
		}
		tools := slices.Clone(r.Tools)
		for _, m := range r.MCPServers {
			tools = append(tools, "mcp:"+m)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f¢\t%d\t%d\t%s\n", r.Name, src, r.Model, r.Timeout(), r.MaxCostCents, r.MaxTokens, r.MaxIter,
			strings.Join(tools, ","))
	}
	tw.Flush()
	for _, e := range list.Errors {
		fmt.Fprintf(a.Stderr, "warning: role skipped: %s\n", e)
	}
	return true
}

// printDaemonHooks writes the hooks the daemon runs and the deliveries
// f selects, when a daemon answers; it reports whether it did.
func printDaemonHooks(ctx context.Context, a *App, all bool, limit int) bool {
	status := ""
	if all {
		status = "all"
	}
	var list client.HookList
	addr, ok := a.daemonView(ctx, func(ctx context.Context, c *client.Client) (err error) {
		list, err = c.Hooks(ctx, status)
		return err
	})
	if !ok {
		return false
	}
	fmt.Fprintf(a.Stdout, "Hooks the daemon at %s runs (after its last reload; with no daemon, ava hooks reads the files):\n", addr)
	if len(list.Hooks) == 0 {
		fmt.Fprintln(a.Stdout, "  none (hooks: in config.yaml; see docs/hooks.md)")
	}
	w := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	for _, h := range list.Hooks {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t(%s)\n", h.ID, h.Kind, h.Target, strings.Join(h.Events, ","), h.From)
	}
	w.Flush()
	fmt.Fprintln(a.Stdout)
	ds := list.Deliveries
	if limit > 0 && len(ds) > limit {
		ds = ds[:limit]
	}
	rows := make([]ava.HookDelivery, len(ds))
	for i, d := range ds {
		r := &rows[i]
		r.Target, r.ID, r.HookID, r.Kind, r.Event, r.SessionKey, r.Seq, r.Run = d.Target, d.ID, d.HookID, d.Kind, d.Event, d.SessionKey, d.Seq, d.RunID
		r.Status, r.Attempts, r.MaxAttempts, r.NextAt, r.LastError, r.DeliveredAt = d.Status, d.Attempts, d.MaxAttempts, d.NextAt, d.LastError, d.DeliveredAt
	}
	printDeliveries(a, rows, all)
	return true
}

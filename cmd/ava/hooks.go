package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
)

func newHooksCmd(a *App) *cobra.Command {
	var all, asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "hooks [--all] [--json]",
		Short: "List lifecycle hook deliveries; retry or test them",
		Long: `List the deliveries of lifecycle hooks that are not delivered yet: pending
(due, or not tried yet), failed (waiting for their next attempt) and dead
(their attempts are spent; ava hooks retry sends them again). --all lists
the delivered ones too, newest first.

Hooks are defined in config.yaml (hooks:) and in the data root's role
files, never in a workspace: commands that get the event JSON on stdin,
and webhooks that get it as a POST signed with X-Ava-Signature. Every
event a hook hears is recorded with the event itself and delivered by
whichever Ava process of this data root (or cluster) runs next, once per
hook. See docs/hooks.md.

When a daemon answers at AVA_ADDR (with this data root's token), the hooks
listed are the ones that daemon runs, as its last reload left them, and
it says so; --json, or no daemon: the hooks config.yaml and the role files
define now.

ava hooks only reads; it works on a read-only data root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !asJSON && printDaemonHooks(cmd.Context(), a, all, limit) {
				return nil
			}
			rt, err := a.openRoles(cmd.Context())
			if err != nil {
				return err
			}
			defer rt.Close()
			f := ava.HookFilter{Limit: limit}
			if !all {
				f.Status = []string{ava.HookPending, ava.HookFailed, ava.HookDead}
			}
			ds, err := rt.HookDeliveries(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.Stdout, ds)
			}
			printHooks(a, rt.Hooks())
			printDeliveries(a, ds, all)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list delivered deliveries too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deliveries as JSON")
	cmd.Flags().IntVar(&limit, "limit", 100, "list at most this many")
	cmd.AddCommand(newHooksRetryCmd(a), newHooksTestCmd(a))
	return cmd
}

func newHooksRetryCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "retry [ID ...]",
		Short: "Send failed and dead deliveries again, now",
		Long: `Send the failed and dead deliveries (those named by ID, else all of them)
back to pending with their attempts reset, and make one attempt at each
now, in this process, with the hooks of this data root's configuration.
An ID is the delivery's, as ava hooks shows it and the hook received it
(X-Ava-Delivery, AVA_HOOK_DELIVERY), or a prefix of it that names one
delivery. Prints how each went; exits 1 when one still failed (it is
retried with backoff by the next Ava process that runs).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := a.openLocal(cmd.Context())
			if err != nil {
				return err
			}
			defer rt.Close()
			ds, err := rt.RetryHookDeliveries(cmd.Context(), args)
			if err != nil {
				return err
			}
			if len(ds) == 0 {
				fmt.Fprintln(a.Stdout, "nothing to retry: no failed or dead delivery matched")
				return nil
			}
			printDeliveries(a, ds, true)
			if slices.ContainsFunc(ds, func(d ava.HookDelivery) bool { return d.Status != ava.HookDelivered }) {
				return errSilent
			}
			return nil
		},
	}
}

func newHooksTestCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "test EVENT",
		Short: "Send a sample event to every hook that hears it",
		Long: `Send a made-up EVENT (subagent:start, subagent:complete, subagent:error,
subagent:aborted, subagent:resumed, subagent:queued, session:idle, proposal,
question) to every configured hook that hears it, now, and print how each
took it. The sample has the real body's shape and "test": true; nothing
is recorded. Exits 1 when a hook failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := a.openRoles(cmd.Context())
			if err != nil {
				return err
			}
			defer rt.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 6*time.Minute)
			defer cancel()
			res, err := rt.TestHook(ctx, args[0])
			if err != nil {
				return err
			}
			failed := false
			for _, r := range res {
				if r.Err != nil {
					failed = true
					fmt.Fprintf(a.Stdout, "FAILED  %s %s (%s): %v\n", r.Hook.ID(), r.Hook.Target(), r.Hook.From, r.Err)
					continue
				}
				fmt.Fprintf(a.Stdout, "ok      %s %s (%s)\n", r.Hook.ID(), r.Hook.Target(), r.Hook.From)
			}
			if failed {
				return errSilent
			}
			return nil
		},
	}
}

// printHooks lists the configured hooks.
func printHooks(a *App, hs []ava.Hook) {
	if len(hs) == 0 {
		fmt.Fprintln(a.Stdout, "No hook is configured (hooks: in config.yaml; see docs/hooks.md).")
		return
	}
	fmt.Fprintln(a.Stdout, "Hooks:")
	w := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	for _, h := range hs {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t(%s)\n", h.ID(), h.Kind(), h.Target(), strings.Join(h.Events, ","), h.From)
	}
	w.Flush()
	fmt.Fprintln(a.Stdout)
}

// printDeliveries lists deliveries as a table.
func printDeliveries(a *App, ds []ava.HookDelivery, all bool) {
	if len(ds) == 0 {
		if all {
			fmt.Fprintln(a.Stdout, "No delivery.")
		} else {
			fmt.Fprintln(a.Stdout, "No delivery is waiting: every event was delivered (ava hooks --all lists them).")
		}
		return
	}
	w := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATUS\tATTEMPTS\tEVENT\tHOOK\tTARGET\tNEXT/DONE\tLAST ERROR")
	for _, d := range ds {
		when := d.NextAt.Local().Format("2006-01-02 15:04:05")
		if d.DeliveredAt != nil {
			when = d.DeliveredAt.Local().Format("2006-01-02 15:04:05")
		} else if d.Status == ava.HookDead {
			when = "-"
		}
		target := d.Target
		if target == "" {
			target = "(not configured)"
		}
		fmt.Fprintf(w, "%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Status, d.Attempts, d.MaxAttempts, d.Event, d.HookID,
			target, when, oneLine(d.LastError, 80))
	}
	w.Flush()
}

// openLocal opens a runtime in this process (read-write), for commands
// that act on the data root themselves.
func (a *App) openLocal(ctx context.Context) (*ava.Runtime, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	return ava.Open(ctx, ava.Options{Config: cfg, Logger: a.Logger()})
}

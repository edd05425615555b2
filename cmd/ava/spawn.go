package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
)

type spawnOptions struct {
	cfg     ava.SubagentConfig
	timeout time.Duration
	wait    bool
	json    bool
	offline bool
	yes     bool
}

func newSpawnCmd(a *App) *cobra.Command {
	var o spawnOptions
	cmd := &cobra.Command{
		Use:   "spawn --role ROLE [flags] --wait TASK",
		Short: "Run one subagent on a task and print its result",
		Long: `Spawn a subagent with a role and a task. Its ID is printed at once, its
progress goes to stderr, and its result (summary, output, confidence, tokens,
cost, duration, iterations, status) is printed when it ends.

With --wait the subagent runs in this process and the command waits for
it; Ctrl-C cancels it, and the exit code is 0 when it succeeded and 1
otherwise. Without --wait it is handed to the daemon (ava serve, at
AVA_ADDR) to run in the background: its ID is printed at once; follow it
with ava status, ava logs or the daemon's stream.

When AVA_CONFIRM asks for it (the default, always), the spawn's proposal
(estimated time, maximum cost, tools, model) is shown with its pending ID
P-xxxxxx before anything starts. With --wait on a terminal you are asked
at once: y, n, or a change in words ("yes but use haiku"); an unclear
answer is asked again. Without a terminal nothing starts and the command
exits 1: answer later with ava confirm P-xxxxxx yes, or run again with
--yes. Without --wait the daemon keeps the proposal for ava confirm (with
AVA_ADDR set), its panel or chat. --yes confirms it here and now.`,
		Example: `  ava spawn --role code_reviewer --wait "review the error handling in cmd/"
  ava spawn --role researcher --model haiku --max-cost 10 --wait --json "what is WAL mode in SQLite?"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFlags(a, cmd); err != nil {
				return err
			}
			o.cfg.Task = strings.Join(args, " ")
			o.cfg.Timeout = o.timeout.Seconds()
			if !o.wait {
				if err := refuseOffline(cmd, "without --wait"); err != nil {
					return err
				}
				return spawnOnDaemon(cmd.Context(), a, o)
			}
			return spawnOnce(cmd.Context(), a, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.Role, "role", "", "the subagent's role (see ava roles)")
	f.StringVar(&o.cfg.Model, "model", "", "override the role's model (provider/model or haiku, sonnet, opus)")
	f.DurationVar(&o.timeout, "timeout", 0, "wall-clock limit (default: the role's)")
	f.Float64Var(&o.cfg.MaxCostCents, "max-cost", 0, "cost cap in cents (default: the role's)")
	f.IntVar(&o.cfg.MaxTokens, "max-tokens", 0, "token cap (default: the role's)")
	f.IntVar(&o.cfg.MaxIterations, "max-iterations", 0, "cap on model calls (default: the role's)")
	f.StringVar(&o.cfg.Context, "context", "", "background for the subagent")
	f.BoolVar(&o.wait, "wait", false, "run in this process and wait for the result (without it, the daemon runs it in the background)")
	f.BoolVar(&o.json, "json", false, "print the result as JSON")
	f.BoolVar(&o.yes, "yes", false, "you confirm the spawn now: it starts without a proposal (AVA_CONFIRM=never for this command)")
	addOfflineFlag(cmd, &o.offline)
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.RegisterFlagCompletionFunc("role", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return ava.BuiltinRoleNames(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func spawnOnce(ctx context.Context, a *App, o spawnOptions) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	cfg, offline := a.chooseModel(cfg, o.offline, o.cfg.Model)
	if offline {
		o.cfg.Model = cfg.Model
	}
	// The model runs in this process: the person at the command line
	// named it (--model, --offline, or the offline rule), as the operator.
	o.cfg.ModelBy = llm.NamedByOperator
	if o.yes {
		cfg.Confirm = "never"
	}
	rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: a.Logger()})
	if err != nil {
		return err
	}
	defer rt.Close()
	parent, err := rt.NewSession(ctx, "cli")
	if err != nil {
		return err
	}
	sp, err := rt.Spawn(ctx, ava.SpawnRequest{Parent: parent, Config: o.cfg, User: a.Getenv("USER")})
	if err != nil {
		return err
	}
	var sa ava.Subagent
	if p := sp.Proposal; p != nil {
		if sa, err = askSpawn(ctx, a, rt, *p, o.json); err != nil {
			return err
		}
	} else {
		sa = *sp.Subagent
	}
	if !o.json {
		fmt.Fprintln(a.Stdout, sa.ID)
	}
	if ava.IsOffline(sa.Model) {
		fmt.Fprintf(a.Stderr, "[offline] %s runs on the scripted model %s: not a real model\n", sa.ID, sa.Model)
	}
	followDone := make(chan struct{})
	fctx, stopFollow := context.WithCancel(ctx)
	sub := rt.Follow(sa.SessionKey, 0)
	go func() {
		defer close(followDone)
		terminal.FollowSubagent(fctx, sub, sa.Role, a.Stderr)
	}()
	done, werr := rt.Wait(ctx, sa.ID)
	if werr != nil {
		_, _ = rt.Cancel(context.WithoutCancel(ctx), sa.ID)
		done, werr = rt.Wait(context.WithoutCancel(ctx), sa.ID)
	}
	stopFollow()
	<-followDone
	sub.Close()
	if werr != nil {
		return werr
	}
	if done.Result == nil {
		return withCode(1, fmt.Errorf("subagent %s ended with status %s and no result%s", sa.ID, done.Status, errSuffix(done.Error)))
	}
	r := *done.Result
	printResult(a, r, o.json)
	if r.Status != lifecycle.Success {
		return withCode(1, fmt.Errorf("subagent %s ended with status %s%s", sa.ID, r.Status, errSuffix(r.Error)))
	}
	return nil
}

// spawnOnDaemon hands the spawn to the daemon and prints the new
// subagent's ID (or its record, with --json).
func spawnOnDaemon(ctx context.Context, a *App, o spawnOptions) error {
	c, err := a.daemon()
	if err != nil {
		return err
	}
	sa, p, err := c.Spawn(ctx, client.SpawnRequest{Role: o.cfg.Role, Task: o.cfg.Task, Context: o.cfg.Context, Model: o.cfg.Model,
		TimeoutSeconds: o.cfg.Timeout, MaxCostCents: o.cfg.MaxCostCents, MaxTokens: o.cfg.MaxTokens,
		MaxIterations: o.cfg.MaxIterations, User: a.Getenv("USER")})
	if err != nil {
		return daemonError(c, err)
	}
	if p != nil && !o.yes {
		return printProposal(a, p.ID, p.Text, p, o.json)
	}
	if p != nil {
		d, err := c.Confirm(ctx, p.ID, client.ConfirmRequest{Decision: client.DecisionYes})
		if err != nil {
			return daemonError(c, err)
		}
		if sa, err = c.Subagent(ctx, d.SubagentIDs[0]); err != nil {
			return daemonError(c, err)
		}
	}
	if o.json {
		b, _ := json.MarshalIndent(sa, "", "  ")
		fmt.Fprintln(a.Stdout, string(b))
		return nil
	}
	fmt.Fprintln(a.Stdout, sa.ID)
	fmt.Fprintf(a.Stderr, "%s %s is %s on the daemon; follow it with: ava status %s (or ava logs %s)\n",
		sa.ID, sa.Role, sa.Status, sa.ID, sa.ID)
	return nil
}

// askSpawn puts the spawn's proposal to the person on the terminal and
// returns the subagent their yes started. Without a terminal nothing
// starts: the proposal stays pending, and the error says how to answer
// it (exit 1). A no is an error too: the subagent did not succeed.
func askSpawn(ctx context.Context, a *App, rt *ava.Runtime, p ava.Proposal, asJSON bool) (ava.Subagent, error) {
	if !isTerminalReader(a.Stdin) {
		printProposalOnly(a, p.Text, p, asJSON)
		return ava.Subagent{}, withHint(fmt.Errorf("nothing started: %s awaits your confirmation (AVA_CONFIRM) and no terminal is here to ask", p.ID),
			fmt.Sprintf("run again with --yes, or answer it with: ava confirm %s yes", p.ID))
	}
	fmt.Fprintln(a.Stderr, p.Text)
	d, err := decideLocal(ctx, a, rt, "", p.ID, newAnswerSource(a, ""))
	if err != nil {
		return ava.Subagent{}, err
	}
	if len(d.SubagentIDs) == 0 {
		return ava.Subagent{}, withCode(1, fmt.Errorf("%s: you declined the spawn; nothing ran", p.ID))
	}
	return rt.Subagent(ctx, d.SubagentIDs[0])
}

// printProposal shows a spawn that awaits confirmation: its text (or
// the proposal as JSON) on stdout, what to do on stderr.
func printProposal(a *App, id, text string, p any, asJSON bool) error {
	printProposalOnly(a, text, p, asJSON)
	fmt.Fprintf(a.Stderr, "%s awaits confirmation (AVA_CONFIRM); answer it with: ava confirm %s yes (or no, or \"yes but use haiku\"), or run again with --yes\n", id, id)
	return nil
}

// printProposalOnly prints a proposal's text, or the proposal as JSON,
// on stdout.
func printProposalOnly(a *App, text string, p any, asJSON bool) {
	if asJSON {
		b, _ := json.MarshalIndent(map[string]any{"pending": p}, "", "  ")
		fmt.Fprintln(a.Stdout, string(b))
		return
	}
	fmt.Fprintln(a.Stdout, text)
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func printResult(a *App, r ava.Result, asJSON bool) {
	if asJSON {
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(a.Stdout, string(b))
		return
	}
	fmt.Fprintf(a.Stdout, "status: %s · %.1fs · %d tokens · %s · %d iterations", r.Status, r.DurationSeconds, r.TokensUsed, money.Spend(r.CostCents, r.TokensUsed, false), r.Iterations)
	if r.OutputFormat == "json" {
		fmt.Fprintf(a.Stdout, " · confidence %.2f", r.Confidence)
	}
	fmt.Fprintln(a.Stdout)
	if r.Summary != "" {
		fmt.Fprintf(a.Stdout, "summary: %s\n", r.Summary)
	}
	switch r.OutputFormat {
	case "json":
		var v any
		_ = json.Unmarshal(r.Output, &v)
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(a.Stdout, "output (json):\n%s\n", b)
	case "text":
		var s string
		_ = json.Unmarshal(r.Output, &s)
		fmt.Fprintf(a.Stdout, "output (text; the subagent returned no JSON):\n%s\n", s)
	}
	printSources(a, r.Citations)
}

// printSources lists the pages a result cites (the provider's web
// search citations): title, URL and the cited text.
func printSources(a *App, cs []llm.Citation) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(a.Stdout, "sources:")
	for i, c := range cs {
		fmt.Fprintf(a.Stdout, "%d. %s <%s>", i+1, terminal.Printable(strings.Join(strings.Fields(c.Title), " ")), terminal.Printable(c.URL))
		if c.CitedText != "" {
			fmt.Fprintf(a.Stdout, ": %q", strings.Join(strings.Fields(c.CitedText), " "))
		}
		fmt.Fprintln(a.Stdout)
	}
}

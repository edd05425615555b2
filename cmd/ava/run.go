package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/lifecycle"
)

type runOptions struct {
	json     bool
	yes      bool
	offline  bool
	model    string
	session  string
	timeout  time.Duration
	maxCost  float64
	maxToken int
	maxIter  int
	budget   float64
}

func newRunCmd(a *App) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] MESSAGE",
		Short: "Send one message to the orchestrator and print the answer",
		Long: `Send one message to the orchestrator. The answer streams to stdout as it
arrives; tool activity goes to stderr. With --json, one JSON object with the
status, text, tokens, cost, duration and iterations is printed at the end.

When AVA_CONFIRM asks about a spawn (the default, always), the proposal is
shown and, on a terminal, you are asked: y, n, or a change in words ("yes
but use haiku"); an unclear answer is asked again, and a confirmed
subagent runs and is waited for. Without a terminal nothing starts and the
exit code is 1: answer with ava confirm P-xxxxxx yes, or run again with
--yes. The session key is printed at the end (stderr; "session" in --json):
go on with ava run --session KEY.

The exit code is 0 when the run succeeded and 1 otherwise (including a limit
such as --timeout or --max-cost being reached, or a proposal left pending).

` + sessionRule,
		Example: `  ava run "summarise README.md"
  OPENAI_BASE_URL=http://localhost:11434/v1 AVA_MODEL=openai/llama3.2 ava run "hello"
  ava run --offline --json "hello"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFlags(a, cmd); err != nil {
				return err
			}
			if o.session != "" {
				var err error
				if o.session, err = mainSessionArg("--session", o.session); err != nil {
					return err
				}
			}
			return runOnce(cmd.Context(), a, o, strings.Join(args, " "))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print a machine-readable result")
	f.BoolVar(&o.yes, "yes", false, "spawns start without asking you first (AVA_CONFIRM=never for this run); without it, a spawn the policy asks about is asked on the terminal, and without one nothing starts (answer later with ava confirm P-…)")
	f.StringVar(&o.model, "model", "", "model as provider/model or an alias: haiku, sonnet, opus (default $AVA_MODEL)")
	f.StringVar(&o.session, "session", "", "continue this session: a name (notes: ava:cli:notes) or a full key (default: a new ava:cli:… session)")
	addTurnFlags(f, &o, "the run")
	addOfflineFlag(cmd, &o.offline)
	return cmd
}

// addTurnFlags adds the flags that bound each orchestrator turn (ava run,
// ava chat) and set the session's budget.
func addTurnFlags(f *pflag.FlagSet, o *runOptions, what string) {
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "wall-clock limit for "+what)
	f.Float64Var(&o.maxCost, "max-cost", 100, "cost cap in cents for "+what)
	f.IntVar(&o.maxToken, "max-tokens", 500_000, "token cap for "+what)
	f.IntVar(&o.maxIter, "max-iterations", 40, "cap on model calls for "+what)
	f.Float64Var(&o.budget, "budget", 0, "set the session's budget in cents: the orchestrator and its subagents together spend at most this (kept for --session)")
}

// orchestratorModel is the full name of the model the flags choose:
// --model, or the configured one (which chooseModel set to the offline
// model for --offline or when no provider is configured).
func (o runOptions) orchestratorModel(rt *ava.Runtime) (string, error) {
	return rt.OrchestratorModel(o.model)
}

// continueCmd is the command line that continues session key as this
// one ran: with --offline when it was given, so that a copied hint runs
// on the same model.
func (o runOptions) continueCmd(command, key string) string {
	line := "ava " + command
	if o.offline {
		line += " --offline"
	}
	return line + " --session " + key
}

// limits are the turn limits the flags set.
func (o runOptions) limits() ava.TurnLimits {
	return ava.TurnLimits{Timeout: o.timeout, MaxCostCents: o.maxCost, MaxTokens: o.maxToken, MaxIterations: o.maxIter}
}

func runOnce(ctx context.Context, a *App, o runOptions, message string) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	if o.yes {
		cfg.Confirm = "never"
	}
	cfg, chosen := a.chooseModel(cfg, o.offline, o.model)
	rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: a.Logger()})
	if err != nil {
		return err
	}
	defer rt.Close()
	model, err := o.orchestratorModel(rt)
	if err != nil {
		if errors.Is(err, ava.ErrNoModel) {
			return withCode(1, err)
		}
		return err
	}
	if ava.IsOffline(model) && !chosen && !o.json {
		fmt.Fprintf(a.Stderr, "[offline] answering with the scripted model %s: no network, not a real model\n", model)
	}
	key := o.session
	if key == "" {
		key = "ava:cli:" + uuid.NewString()[:8]
	}
	var ask *bufio.Reader
	if isTerminalReader(a.Stdin) {
		ask = bufio.NewReader(a.Stdin)
	}
	res, err := runTurn(ctx, a, rt, o, key, message)
	for err == nil && ctx.Err() == nil {
		var more bool
		if more, err = answerPending(ctx, a, rt, key, ask); !more {
			break
		}
	}
	if o.json {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(a.Stdout, string(b))
	} else if res.Session != "" {
		// The session exists (the turn started): say how to go on with it.
		fmt.Fprintf(a.Stderr, "session %s: continue with %s \"…\"\n", key, o.continueCmd("run", key))
	}
	if err != nil {
		return err
	}
	if res.Status != lifecycle.Success {
		return withHint(fmt.Errorf("run ended with status %s: %s", res.Status, res.Error), statusHint(res.Status))
	}
	return nil
}

// runTurn sends one message to session key and prints the turn, and
// what its background subagents did, as it happens.
func runTurn(ctx context.Context, a *App, rt *ava.Runtime, o runOptions, key, message string) (ava.TurnResult, error) {
	model, err := o.orchestratorModel(rt)
	if err != nil {
		return ava.TurnResult{}, err
	}
	turn, sub, err := rt.Chat(ctx, key, message, ava.SendOptions{User: a.Getenv("USER"), Model: model, Budget: o.budget, Limits: o.limits()})
	if err != nil {
		return ava.TurnResult{}, err
	}
	defer sub.Close()
	printed, until := make(chan struct{}), make(chan uint64, 1)
	go func() {
		defer close(printed)
		terminal.PrintTurn(ctx, sub, until, a.Stdout, a.Stderr, o.json)
	}()
	res, askErr := turn.Wait(ctx)
	if ctx.Err() != nil {
		// Ctrl-C: stop the turn and its subagents, and record how they ended.
		_, _ = rt.Stop(context.WithoutCancel(ctx), key)
		res, askErr = turn.Wait(context.WithoutCancel(ctx))
	}
	waitBackground(ctx, a, rt, key, o.continueCmd("run", key), o.json)
	// Once they have ended Ava reports their results by itself
	// (on_complete): the report is part of what this run prints.
	if _, _, err := rt.WaitReport(ctx, key); err != nil && ctx.Err() == nil {
		fmt.Fprintf(a.Stderr, "[the report of the background results did not arrive: %v]\n", err)
	}
	// Everything the turn, its subagents and the report did is stored:
	// print it all.
	if last, err := rt.LastSeq(context.WithoutCancel(ctx), key); err == nil {
		until <- last
	} else {
		close(until)
	}
	<-printed
	if res.Session == "" {
		res.Session = key
	}
	return res, askErr
}

// answerPending asks the person about the session's first pending
// proposal, decides it (an unclear answer is asked again) and waits for
// what it started, printing its progress and result; more is false
// when none was pending. Without a terminal (ask nil) a pending proposal
// is an error saying how to answer it: nothing started.
func answerPending(ctx context.Context, a *App, rt *ava.Runtime, key string, ask *bufio.Reader) (more bool, err error) {
	pending, err := rt.Proposals(ctx, key)
	if err != nil || len(pending) == 0 {
		return false, err
	}
	p := pending[0]
	if ask == nil {
		return false, withHint(fmt.Errorf("nothing started: %s awaits your confirmation (AVA_CONFIRM) and no terminal is here to ask", p.ID),
			fmt.Sprintf("answer it with: ava confirm %s yes (or no, or \"yes but use haiku\"), or run again with --yes", p.ID))
	}
	src := &answerSource{in: ask, a: a}
	src.prompt = p.ID + ": " + askPrompt
	d, err := decideLocal(ctx, a, rt, key, p.ID, src)
	if err != nil {
		return false, err
	}
	for _, id := range d.SubagentIDs {
		done, err := rt.Wait(ctx, id)
		if err != nil {
			_, _ = rt.Cancel(context.WithoutCancel(ctx), id)
			return false, fmt.Errorf("wait for %s: %w", id, err)
		}
		fmt.Fprintln(a.Stderr, terminal.StatusLine(done))
		if done.Result != nil && done.Result.Summary != "" {
			fmt.Fprintf(a.Stdout, "%s: %s\n", id, done.Result.Summary)
		}
	}
	// Once what the answer started has ended, Ava reports it by itself.
	if rep, ok, err := rt.WaitReport(ctx, key); err == nil && ok && rep.Text != "" {
		fmt.Fprintln(a.Stdout, rep.Text)
	}
	return true, nil
}

// waitBackground waits for the subagents the run left in the background:
// this process is their only home, so it must not exit under them. Their
// results are stored in the session, and reported (WaitReport).
func waitBackground(ctx context.Context, a *App, rt *ava.Runtime, session, again string, quiet bool) {
	waiting, err := rt.Subagents(context.WithoutCancel(ctx), ava.SubagentFilter{Parent: session, Status: lifecycle.Active})
	if err != nil || len(waiting) == 0 {
		return
	}
	if !quiet {
		fmt.Fprintf(a.Stderr, "[waiting for %d background subagent(s); Ctrl-C stops them]\n", len(waiting))
	}
	if ctx.Err() != nil {
		// Interrupted already: they are being stopped with the turn.
		ctx = context.WithoutCancel(ctx)
	}
	for _, sa := range waiting {
		done, err := rt.Wait(ctx, sa.ID)
		if err != nil {
			_, _ = rt.Cancel(context.WithoutCancel(ctx), sa.ID)
			done, err = rt.Wait(context.WithoutCancel(ctx), sa.ID)
		}
		if !quiet && err == nil {
			fmt.Fprintln(a.Stderr, terminal.StatusLine(done))
		}
	}
	if !quiet {
		fmt.Fprintf(a.Stderr, "[their results are stored in session %s: continue with %s \"…\"]\n", session, again)
	}
}

func statusHint(s lifecycle.Status) string {
	switch s {
	case lifecycle.Timeout:
		return "raise the limit with --timeout"
	case lifecycle.CostExceeded:
		return "raise the cap with --max-cost (cents)"
	case lifecycle.TokensExceeded:
		return "raise the cap with --max-tokens"
	case lifecycle.IterationsExceeded:
		return "raise the cap with --max-iterations"
	}
	return ""
}

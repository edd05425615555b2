package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/subagent"
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

The exit code is 0 when the run succeeded and 1 otherwise (including a limit
such as --timeout or --max-cost being reached).`,
		Example: `  ava run "summarise README.md"
  OPENAI_BASE_URL=http://localhost:11434/v1 AVA_MODEL=openai/llama3.2 ava run "hello"
  ava run --offline --json "hello"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFlags(a, cmd); err != nil {
				return err
			}
			return runOnce(cmd.Context(), a, o, strings.Join(args, " "))
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print a machine-readable result")
	f.BoolVar(&o.yes, "yes", false, "no effect yet: accepted for forward compatibility (spawn confirmation is not built, so spawns are not confirmed)")
	f.BoolVar(&o.offline, "offline", false, "use the offline scripted demo model (no network, no key)")
	f.StringVar(&o.model, "model", "", "model as provider/model or an alias: haiku, sonnet, opus (default $AVA_MODEL)")
	f.StringVar(&o.session, "session", "", "continue this session key (default: a new ava:cli:… session)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "wall-clock limit for the run")
	f.Float64Var(&o.maxCost, "max-cost", 100, "cost cap in cents")
	f.IntVar(&o.maxToken, "max-tokens", 500_000, "token cap")
	f.IntVar(&o.maxIter, "max-iterations", 40, "cap on model calls")
	f.Float64Var(&o.budget, "budget", 0, "set the session's budget in cents: the orchestrator and its subagents together spend at most this (kept for --session)")
	return cmd
}

func runOnce(ctx context.Context, a *App, o runOptions, message string) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	in, err := app.Open(ctx, cfg, a.Logger())
	if err != nil {
		return err
	}
	defer in.Close()
	name := o.model
	if o.offline {
		name = "scripted/demo"
	}
	model, err := app.OrchestratorModel(cfg, in.Catalog, name)
	if err != nil {
		if errors.Is(err, app.ErrNoModel) {
			return withCode(1, err)
		}
		return err
	}
	offline := app.IsOffline(model)
	if offline && !o.json {
		fmt.Fprintf(a.Stderr, "[offline] answering with the scripted model %s: no network, not a real model\n", model.Name())
	}
	tools, err := in.OrchestratorTools(ctx)
	if err != nil {
		return err
	}
	session := o.session
	if session == "" {
		session = "ava:cli:" + uuid.NewString()[:8]
	}
	orch := orchestrator.New(orchestrator.Config{
		Model: model, Tools: tools, Hub: in.Hub, Sessions: in.Store, History: in.History(), Workspace: cfg.Workspace, Offline: offline, Logger: a.Logger(),
		Limits: agent.Limits{Timeout: o.timeout, MaxCostCents: o.maxCost, MaxTokens: o.maxToken, MaxIterations: o.maxIter},
	})
	if o.budget > 0 {
		if err := in.Store.SetSessionBudget(ctx, session, o.budget); err != nil {
			return err
		}
	}
	last, err := in.Hub.Journal(session).LastSeq()
	if err != nil {
		return err
	}
	printed := make(chan struct{})
	sub := in.Hub.Subscribe(session, last)
	pctx, stopPrint := context.WithCancel(ctx)
	go func() {
		defer close(printed)
		printLive(pctx, sub, a, o.json)
	}()
	res, askErr := orch.Ask(ctx, session, a.Getenv("USER"), message)
	waitBackground(ctx, a, in, session, o.json)
	in.Hub.Forget(session)
	<-printed
	stopPrint()
	if o.json {
		b, _ := json.MarshalIndent(orchestrator.JSON(res, session, model, offline), "", "  ")
		fmt.Fprintln(a.Stdout, string(b))
	}
	if askErr != nil {
		return askErr
	}
	if res.Status != agent.StatusSuccess {
		return withHint(fmt.Errorf("run ended with status %s: %v", res.Status, res.Err), statusHint(res.Status))
	}
	return nil
}

// waitBackground waits for the subagents the run left in the background:
// this process is their only home, so it must not exit under them. Their
// results are stored in the session for its next message.
func waitBackground(ctx context.Context, a *App, in *app.Instance, session string, quiet bool) {
	var waiting []*subagent.Handle
	for _, h := range in.Subagent.List(false) {
		if h.Parent() == session {
			waiting = append(waiting, h)
		}
	}
	if len(waiting) == 0 {
		return
	}
	if !quiet {
		fmt.Fprintf(a.Stderr, "[waiting for %d background subagent(s); Ctrl-C stops them]\n", len(waiting))
	}
	for _, h := range waiting {
		if _, err := h.Wait(ctx); err != nil {
			h.Cancel()
		}
		if !quiet {
			fmt.Fprintln(a.Stderr, subagent.StatusLine(h.Status()))
		}
	}
	if !quiet {
		fmt.Fprintf(a.Stderr, "[their results are stored in session %s: continue with ava run --session %s \"…\"]\n", session, session)
	}
}

func statusHint(s agent.Status) string {
	switch s {
	case agent.StatusTimeout:
		return "raise the limit with --timeout"
	case agent.StatusCostExceeded:
		return "raise the cap with --max-cost (cents)"
	case agent.StatusTokensExceeded:
		return "raise the cap with --max-tokens"
	case agent.StatusIterationsExceeded:
		return "raise the cap with --max-iterations"
	}
	return ""
}

// printLive streams the session's answer to stdout (unless quiet) and its
// tool activity to stderr, until the session's journal closes.
func printLive(ctx context.Context, sub *event.Subscription, a *App, quiet bool) {
	wroteText, endsWithNewline := false, true
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			if wroteText && !endsWithNewline && !quiet {
				io.WriteString(a.Stdout, "\n")
			}
			return
		}
		for _, ev := range evs {
			if quiet {
				continue
			}
			switch ev.Type {
			case event.TextDelta:
				var c event.TextContent
				if ev.Decode(&c) == nil && c.Text != "" {
					io.WriteString(a.Stdout, c.Text)
					wroteText, endsWithNewline = true, strings.HasSuffix(c.Text, "\n")
				}
			case event.Retry:
				var c event.RetryContent
				_ = ev.Decode(&c)
				fmt.Fprintf(a.Stderr, "\n[retrying model call, attempt %d: %s]\n", c.Attempt, c.Error)
			case event.ToolCall:
				var c event.ToolCallContent
				_ = ev.Decode(&c)
				fmt.Fprintf(a.Stderr, "[tool] %s %s\n", c.Name, shorten(string(c.Args), 120))
			case event.SubagentSpawn, event.SubagentComplete:
				var c struct {
					Role       string `json:"role"`
					SubagentID string `json:"subagentId"`
				}
				_ = ev.Decode(&c)
				if line := subagent.EventLine(c.Role, ev); line != "" {
					fmt.Fprintf(a.Stderr, "%s [%s]\n", line, c.SubagentID)
				}
			case event.AssistantMessage:
				if wroteText && !endsWithNewline {
					io.WriteString(a.Stdout, "\n")
					endsWithNewline = true
				}
			}
		}
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

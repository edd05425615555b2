package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// Long-running processes ask too (seed 000 section 2.1: confirmation
// before spawning subagents "or long-running processes"). When the
// confirmation policy asks (always, above:<cents>: a process's cost is
// not known, so any asking policy asks), an orchestrator's run_bash or
// python_exec call that will likely run at least Options.ConfirmProcessesAfter
// is a proposal of kind "process" first: stored like a spawn's (the
// pending spawns, their decisions and expiry), announced by SpawnProposed
// and answered the same ways (yes, no, "yes but only 30 seconds"). The
// call waits in the turn for the answer: on yes it runs (with the
// changed timeout, for a change) and its result goes back to the turn;
// on no, or when the proposal expires or the turn ends, the tool result
// says so and nothing runs. The turn's wall-clock timeout is paused
// while it waits (agent.PauseTimeout), as for ask_user.
//
// How long a call will likely run (processEstimate): its declared
// timeout_seconds; else a `sleep N` (or Python's `time.sleep(N)`) in the
// command (the largest N); else
// the tool's default timeout when the command is a known long-runner:
// a package install (apt, apt-get, dnf, yum, apk, brew, pip, pip3, npm,
// pnpm, yarn, cargo, go install / get, gem), a build (make, cmake --build,
// cargo build, go build, go test, docker build, npm run build, mvn,
// gradle) or a clone (git clone). Subagents' calls never
// ask: the person confirmed the subagent.

// Proposal kinds.
const (
	KindSpawn   = "spawn"
	KindProcess = "process"
)

// ProposedProcess is the orchestrator's tool call a process proposal
// runs once confirmed.
type ProposedProcess struct {
	// Tool is run_bash or python_exec; Args the call's arguments.
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// Command is the command or program shown to the person.
	Command string `json:"command"`
	// Seconds is how long it will likely run, Why how that was told.
	Seconds float64 `json:"seconds"`
	Why     string  `json:"why"`
}

// processArgs are the arguments of run_bash and python_exec the
// estimate reads.
type processArgs struct {
	Command        string  `json:"command"`
	Code           string  `json:"code"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

var (
	sleepPattern      = regexp.MustCompile(`\bsleep[\s(]+(\d+(?:\.\d+)?)([smh]?)\b`)
	longRunnerPattern = regexp.MustCompile(`(?m)(^|[;&|(]\s*|\bsudo\s+)(` +
		`(apt|apt-get|dnf|yum|apk|brew|gem)\s+(install|upgrade|add)|` +
		`(pip|pip3|uv\s+pip)\s+install|(npm|pnpm|yarn)\s+(install|ci|add|run\s+build)|` +
		`cargo\s+(build|install)|go\s+(build|install|get|test)|docker\s+(build|pull)|` +
		`make\b|cmake\s+--build|mvn\b|gradle\b|git\s+clone)`)
)

// processEstimate is how long a call of tool with args will likely run,
// and why; 0 when nothing says it will be long. defaultTimeout is the
// tool's own.
func processEstimate(args json.RawMessage, defaultTimeout time.Duration) (float64, string) {
	var a processArgs
	if json.Unmarshal(args, &a) != nil {
		return 0, ""
	}
	if a.TimeoutSeconds > 0 {
		return a.TimeoutSeconds, fmt.Sprintf("it declares a %s timeout", confirm.FormatSeconds(a.TimeoutSeconds))
	}
	text := a.Command + "\n" + a.Code
	longest := 0.0
	for _, m := range sleepPattern.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.ParseFloat(m[1], 64)
		switch m[2] {
		case "m":
			n *= 60
		case "h":
			n *= 3600
		}
		longest = max(longest, n)
	}
	if longest > 0 {
		return longest, fmt.Sprintf("it sleeps %s", confirm.FormatSeconds(longest))
	}
	if m := longRunnerPattern.FindStringSubmatch(text); m != nil {
		return defaultTimeout.Seconds(), fmt.Sprintf("%q usually runs long (up to the %s timeout)", strings.TrimSpace(m[2]), confirm.FormatSeconds(defaultTimeout.Seconds()))
	}
	return 0, ""
}

// ConfirmProcesses wraps the orchestrator's process tools (run_bash,
// python_exec) so that a call that will likely run at least after asks
// the person first when the manager's confirmation policy asks.
// defaultTimeout is the tools' own timeout. Other tools are returned as
// they are.
func (m *Manager) ConfirmProcesses(t tool.Tool, after, defaultTimeout time.Duration) tool.Tool {
	if t.Name() != "run_bash" && t.Name() != "python_exec" || m.opt.Confirm.Ask == confirm.Never || after <= 0 {
		return t
	}
	return &processGate{Tool: t, m: m, after: after, def: defaultTimeout}
}

// processGate is a process tool whose long calls are proposals first.
type processGate struct {
	tool.Tool
	m     *Manager
	after time.Duration
	def   time.Duration
}

// Run implements tool.Tool.
func (g *processGate) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	caller, _ := tool.CallerFrom(ctx)
	secs, why := processEstimate(args, g.def)
	if caller.Subagent || secs < g.after.Seconds() {
		return g.Tool.Run(ctx, args)
	}
	var a processArgs
	_ = json.Unmarshal(args, &a)
	command := a.Command
	if command == "" {
		command = a.Code
	}
	ps := ProposedSpawn{Mode: ModeSingle, Parent: caller.SessionKey, ParentAgent: caller.AgentID, Workspace: caller.Workspace,
		User: caller.User, Process: &ProposedProcess{Tool: g.Name(), Args: args, Command: command, Seconds: secs, Why: why}}
	est := estimate.Estimate{MinSeconds: 0, MaxSeconds: int(secs), Tools: []string{g.Name()}, Basis: "declared"}
	p, err := g.m.props.propose(ctx, ps, est, why)
	if err != nil {
		return tool.Result{}, fmt.Errorf("propose %s: %w", g.Name(), err)
	}
	// The turn's wall-clock limit stops while it waits for the person,
	// as it does for ask_user: the answer's time is theirs.
	resume := agent.PauseTimeout(ctx)
	d, err := g.m.props.waitProcess(ctx, p.ID)
	resume()
	if err != nil {
		return tool.Errorf("[%s %s: no answer came (%v); nothing was run]", p.ID, g.Name(), err), nil
	}
	switch d.Status {
	case store.SpawnConfirmed:
		return g.Tool.Run(ctx, d.Spawn.Process.Args)
	case store.SpawnRejected:
		return tool.Errorf("[%s: the person declined to run this %s call; nothing was run. Do not run it again unless they ask.]", p.ID, g.Name()), nil
	}
	return tool.Errorf("[%s: the proposal to run this %s call %s without an answer from the person; nothing was run.]", p.ID, g.Name(), d.Status), nil
}

// processWaiters wakes the calls waiting for their process proposal's
// decision in this process; a decision made by another process is seen
// by polling the store.
type processWaiters struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

// processPoll is how often a waiting call reads its proposal from the
// store, for a decision another process made.
const processPoll = time.Second

// waitProcess waits until proposal id is decided or expired and returns
// it. When ctx ends first the proposal is rejected, so that no later
// "yes" seems to run it.
func (pp *proposals) waitProcess(ctx context.Context, id string) (Proposal, error) {
	wake := pp.waiters.add(id)
	defer pp.waiters.remove(id)
	tick := time.NewTicker(processPoll)
	defer tick.Stop()
	for {
		p, err := pp.get(context.WithoutCancel(ctx), id)
		if err != nil {
			return Proposal{}, err
		}
		if p.Status != store.SpawnPending {
			return p, nil
		}
		select {
		case <-wake:
		case <-tick.C:
			if !pp.now().Before(p.ExpiresAt) {
				if _, err := pp.expire(context.WithoutCancel(ctx)); err != nil {
					return Proposal{}, err
				}
			}
		case <-ctx.Done():
			err := context.Cause(ctx)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, rerr := pp.reject(rctx, p); rerr != nil && !errors.Is(rerr, ErrDecided) {
				pp.log.Error("withdraw a process proposal", "id", id, "err", rerr)
			}
			return Proposal{}, err
		}
	}
}

func (w *processWaiters) add(id string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.chans == nil {
		w.chans = map[string]chan struct{}{}
	}
	c := make(chan struct{}, 1)
	w.chans[id] = c
	return c
}

func (w *processWaiters) remove(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.chans, id)
}

// wake tells the call waiting for id, if any here, to read it again.
func (w *processWaiters) wake(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.chans[id] <- struct{}{}:
	default:
	}
}

// confirmProcess records the yes to a process proposal (with a changed
// timeout for a change) and wakes its waiting call, which runs it.
func (pp *proposals) confirmProcess(ctx context.Context, p Proposal, d confirm.Decision, c confirm.Change) (Decided, error) {
	var newCfg json.RawMessage
	if d == confirm.Modified {
		if c.TimeoutSeconds <= 0 || c.Model != "" || c.MaxCostCents > 0 || c.MaxTokens > 0 || c.MaxIterations > 0 {
			return Decided{}, fmt.Errorf("modify %s (%s): %w: a process's only change is its timeout (\"only 30 seconds\")", p.ID, c, ErrBadDecision)
		}
		args, err := withTimeout(p.Spawn.Process.Args, c.TimeoutSeconds)
		if err != nil {
			return Decided{}, fmt.Errorf("modify %s: %w: %w", p.ID, ErrBadDecision, err)
		}
		p.Spawn.Process.Args, p.Spawn.Process.Seconds = args, c.TimeoutSeconds
		p.Estimate.MaxSeconds = int(c.TimeoutSeconds)
		if newCfg, err = json.Marshal(record{Spawn: p.Spawn, Estimate: p.Estimate}); err != nil {
			return Decided{}, fmt.Errorf("modify %s: %w", p.ID, err)
		}
	}
	if err := pp.store.DecidePending(ctx, p.ID, store.SpawnConfirmed, newCfg, ""); err != nil {
		return Decided{}, decideErr(p.ID, err)
	}
	p.Status = store.SpawnConfirmed
	out := Decided{Proposal: p, Decision: store.SpawnConfirmed}
	obs := observe.Confirmed
	if d == confirm.Modified {
		out.Change, obs = c.String(), observe.Modified
	}
	pp.publishTo(p.Spawn, event.New(event.SpawnDecided, event.SpawnDecidedContent{PendingID: p.ID, Decision: store.SpawnConfirmed, Change: out.Change}))
	pp.waiters.wake(p.ID)
	pp.noticeDecided(p, obs, observe.ByPerson, out)
	return out, nil
}

// withTimeout returns args with timeout_seconds set.
func withTimeout(args json.RawMessage, secs float64) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, fmt.Errorf("the call's arguments: %w", err)
	}
	m["timeout_seconds"] = int(secs + 0.5)
	return json.Marshal(m)
}

// FormatProcessProposal is a process proposal as shown to the person:
// what it is first ("run_bash: `sleep 120` — estimated 120 s"), the
// whole command below when it has more than one line, why Ava asks and
// the question.
func FormatProcessProposal(p Proposal) string {
	pr := p.Spawn.Process
	var b strings.Builder
	fmt.Fprintf(&b, "%s: `%s` — estimated %s\n", pr.Tool, firstLine(pr.Command, 200), confirm.FormatSeconds(pr.Seconds))
	if cmd := strings.TrimSpace(pr.Command); strings.Contains(cmd, "\n") || len(cmd) > 200 {
		b.WriteString(clip(cmd, 2000) + "\n")
	}
	fmt.Fprintf(&b, "Why I ask: %s.\nProceed? [Yes/No] (%s; or a shorter timeout: \"yes but only 30 seconds\"; expires in %s)",
		pr.Why, p.ID, formatDuration(p.ExpiresAt.Sub(p.CreatedAt)))
	return b.String()
}

// clip is s cut to n bytes, with an ellipsis when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// SpawnArgs are the spawn tool's arguments (spawn_subagent) on every
// surface that offers it: the orchestrator's tool and the MCP server's
// (package ava exposes them as ava.SpawnArgs). One definition and one
// schema, so a field added here appears on both.
type SpawnArgs struct {
	Role             string  `json:"role" jsonschema:"the subagent's role: web_crawler, code_reviewer, data_extractor, researcher, or a custom role's name (the tool's description lists them)"`
	Task             string  `json:"task" jsonschema:"what the subagent must accomplish, stated so it can work without asking questions"`
	Context          string  `json:"context,omitempty" jsonschema:"background the subagent needs: it sees only the task and this (unless context_mode is fork)"`
	Model            string  `json:"model,omitempty" jsonschema:"override the role's model (provider/model or haiku, sonnet, opus; a scripted model only through an alias the operator configured)"`
	Timeout          float64 `json:"timeout,omitempty" jsonschema:"wall-clock limit in seconds (default: the role's, usually 600)"`
	MaxCostCents     float64 `json:"max_cost_cents,omitempty" jsonschema:"cost cap in US cents (default: the role's, usually 50)"`
	MaxTokens        int     `json:"max_tokens,omitempty" jsonschema:"token cap (default: the role's, usually 100000)"`
	MaxIterations    int     `json:"max_iterations,omitempty" jsonschema:"cap on model calls (default: the role's, usually 20)"`
	ExtendedThinking *bool   `json:"extended_thinking,omitempty" jsonschema:"enable extended thinking (default: the role's)"`
	ContextMode      string  `json:"context_mode,omitempty" jsonschema:"fresh (default): the subagent sees only the task and context; fork: it starts from the calling conversation so far (only the orchestrator has one: an MCP client's spawn refuses fork)"`
	Background       bool    `json:"background,omitempty" jsonschema:"true: return the subagent ID at once and deliver its result when it ends (to the orchestrator as a [Subagent] message before its next turn; an MCP client reads it with subagent_status). false (default): wait for the result"`
	Rationale        string  `json:"rationale,omitempty" jsonschema:"why this subagent is needed, in one sentence: shown to the person when the spawn needs their confirmation"`
}

// Config is the spawn the arguments ask for (Background and Rationale
// are how to spawn it, not what).
func (a SpawnArgs) Config() Config {
	return Config{Role: a.Role, Task: a.Task, Context: a.Context, Model: a.Model, Timeout: a.Timeout, MaxCostCents: a.MaxCostCents,
		MaxTokens: a.MaxTokens, MaxIterations: a.MaxIterations, ExtendedThinking: a.ExtendedThinking, ContextMode: ContextMode(a.ContextMode)}
}

// GroupArgs are the group spawn tool's arguments (spawn_subagents) on
// every surface that offers it, as SpawnArgs are.
type GroupArgs struct {
	Mode        string      `json:"mode" jsonschema:"parallel: all tasks at once; chain: one after another, each given the previous result"`
	Tasks       []SpawnArgs `json:"tasks" jsonschema:"the subagents to start (their background and rationale fields are ignored)"`
	BudgetCents float64     `json:"budget_cents,omitempty" jsonschema:"aggregate cost cap for the whole group in cents"`
	Timeout     float64     `json:"timeout,omitempty" jsonschema:"combined wall-clock limit for the whole group in seconds"`
	Background  bool        `json:"background,omitempty" jsonschema:"true: return the IDs at once and deliver the results when they end (to the orchestrator as [Subagent] messages; an MCP client reads them with subagent_status). false (default): wait for every result"`
	Rationale   string      `json:"rationale,omitempty" jsonschema:"why this group is needed, in one sentence: shown to the person when the spawn needs their confirmation"`
}

// Request is the group spawn the arguments ask for, without its parent,
// user and forked conversation (the caller's to set).
func (a GroupArgs) Request() GroupRequest {
	req := GroupRequest{Mode: Mode(a.Mode), Background: a.Background, BudgetCents: a.BudgetCents,
		Timeout: time.Duration(a.Timeout * float64(time.Second))}
	for _, t := range a.Tasks {
		req.Configs = append(req.Configs, t.Config())
	}
	return req
}

// Forks reports whether any task asks for context_mode fork.
func (a GroupArgs) Forks() bool {
	for _, t := range a.Tasks {
		if ContextMode(t.ContextMode) == ContextFork {
			return true
		}
	}
	return false
}

// IDArgs name one subagent.
type IDArgs struct {
	SubagentID string `json:"subagent_id" jsonschema:"the subagent's ID, S-xxxxxx (a unique prefix is enough)"`
}

// ListArgs filter list_subagents.
type ListArgs struct {
	All bool `json:"all,omitempty" jsonschema:"include finished subagents"`
}

// Tools returns the orchestrator's subagent tools: spawn_subagent,
// spawn_subagents, subagent_status, list_subagents, cancel_subagent.
func (m *Manager) Tools() []tool.Tool {
	return []tool.Tool{
		liveRoles{tool.NewFunc("spawn_subagent", spawnDescription, m.spawnTool), m},
		tool.NewFunc("spawn_subagents", "Spawn several subagents as a group: parallel (all at once; tasks beyond the free slots wait in line and start as slots free up, within the group's timeout) or chain (each step gets the previous step's result as context), with an optional aggregate budget and combined timeout. The members share a board (post_finding, read_findings); the group's result carries it.", m.groupTool),
		tool.NewFunc("subagent_status", "Show a subagent's live status (iteration, tokens, cost, elapsed, current activity, last tool call) or its result if it finished.", m.statusTool),
		tool.NewFunc("list_subagents", "List this session's subagents: running and queued ones (with their place in the queue), or with all=true also the finished ones.", m.listTool),
		tool.NewFunc("cancel_subagent", "Stop a running or queued subagent. Its model call and tool processes are stopped and its result is discarded; a queued one leaves the queue without starting.", m.cancelTool),
	}
}

// spawnDescription is spawn_subagent's description before the roles.
const spawnDescription = "Spawn a specialized subagent for a focused task. Use for tasks that benefit from deep exploration, parallel execution, or specialized tools; not for simple queries you can answer yourself, and never for memory writes. The subagent iterates until it completes the task or reaches a resource limit. Roles: "

// liveRoles is spawn_subagent with the roles the manager runs now in
// its description, read at each model request: a role added to the data
// root while a session is open (a reload) is offered at its next turn.
type liveRoles struct {
	tool.Tool
	m *Manager
}

// Description implements tool.Tool.
func (l liveRoles) Description() string { return spawnDescription + l.m.roleSummary() }

// CheckSchema lets the registry check the wrapped tool's schema.
func (l liveRoles) CheckSchema() error {
	if c, ok := l.Tool.(interface{ CheckSchema() error }); ok {
		return c.CheckSchema()
	}
	return nil
}

func (m *Manager) roleSummary() string {
	var parts []string
	for _, r := range role.Sorted(m.roleSet().roles) {
		parts = append(parts, r.SummaryText())
	}
	return strings.Join(parts, "; ") + "."
}

func caller(ctx context.Context) tool.Caller {
	c, _ := tool.CallerFrom(ctx)
	return c
}

func (m *Manager) request(ctx context.Context, a SpawnArgs) Request {
	c := caller(ctx)
	req := Request{Config: a.Config(), Parent: c, User: c.User, Background: a.Background}
	if req.Config.ContextMode == ContextFork {
		req.Fork = agent.ConversationFrom(ctx)
	}
	return req
}

// refusal turns a refused spawn into an error result for the model.
func refusal(err error) (tool.Result, error) {
	if errors.Is(err, ErrClosed) {
		return tool.Result{}, err
	}
	return tool.Errorf("%v", err), nil
}

func (m *Manager) spawnTool(ctx context.Context, a SpawnArgs) (tool.Result, error) {
	h, p, err := m.SpawnOrPropose(ctx, m.request(ctx, a), a.Rationale)
	if err != nil {
		return refusal(err)
	}
	if p != nil {
		return proposalResult(*p)
	}
	if a.Background {
		awaitSpawned(ctx, h)
		return backgroundResult(h)
	}
	r, err := h.Wait(ctx)
	if err != nil {
		h.Cancel()
		return tool.Result{}, err
	}
	return resultOf(r)
}

// awaitSpawned waits until each started run's SubagentSpawn is in its
// parent's stream (about one model request's sending time), so that the
// turn that spawned them in the background shows them before it ends.
// Queued runs are not waited for.
func awaitSpawned(ctx context.Context, hs ...*Handle) {
	for _, h := range hs {
		if h.isQueued() {
			continue
		}
		select {
		case <-h.Spawned():
		case <-ctx.Done():
			return
		}
	}
}

// backgroundResult tells the model a background spawn's ID and whether
// it runs or waits for a slot.
func backgroundResult(h *Handle) (tool.Result, error) {
	st := h.Status()
	out := map[string]any{"subagent_id": h.ID(), "status": lifecycle.Running, "role": h.Role().Name, "model": h.Model().Name(),
		"note": "running in the background; its result will appear as a [Subagent] message before your next turn"}
	if st.Status == lifecycle.Queued {
		out["status"], out["queue_position"] = lifecycle.Queued, st.QueuePosition
		out["note"] = fmt.Sprintf("queued (#%d in line): every slot is taken; it starts when one frees, and its result will appear as a [Subagent] message; cancel_subagent removes it from the queue", st.QueuePosition)
	}
	return jsonResult(out)
}

func (m *Manager) groupTool(ctx context.Context, a GroupArgs) (tool.Result, error) {
	c := caller(ctx)
	req := a.Request()
	req.Parent, req.User = c, c.User
	if a.Forks() {
		req.Fork = agent.ConversationFrom(ctx)
	}
	g, p, err := m.SpawnGroupOrPropose(ctx, req, a.Rationale)
	if err != nil {
		return refusal(err)
	}
	if p != nil {
		return proposalResult(*p)
	}
	if a.Background {
		awaitSpawned(ctx, g.Handles()...)
		var ids []string
		for _, h := range g.Handles() {
			ids = append(ids, h.ID())
		}
		out := map[string]any{"group_id": g.ID, "mode": a.Mode, "subagent_ids": ids, "status": lifecycle.Running,
			"note": "results will appear as [Subagent] messages before your next turn"}
		if q := queuedIDs(g.Handles()); len(q) > 0 {
			out["queued_ids"] = q
			out["note"] = fmt.Sprintf("%d run at once; the %d queued start as slots free up. Results will appear as [Subagent] messages before your next turn", len(ids)-len(q), len(q))
		}
		return jsonResult(out)
	}
	rs, err := g.Wait(ctx)
	if err != nil {
		g.Cancel()
		return tool.Result{}, err
	}
	out := map[string]any{"group_id": g.ID, "mode": a.Mode, "spent_cents": g.SpentCents(), "results": rs}
	board, err := m.Board(ctx, g.ID)
	if err != nil {
		out["board_error"] = err.Error()
	} else {
		out["board"] = boardEntries(board)
	}
	return jsonResult(out)
}

// proposalResult tells the model that its spawn became a proposal that
// only the person can decide. A spawn it meant to wait for is no
// different: the tool returns at once, and a confirmed spawn's result
// arrives as a background result does.
func proposalResult(p Proposal) (tool.Result, error) {
	return jsonResult(map[string]any{"pending_id": p.ID, "status": "awaiting_confirmation", "estimate": p.Estimate,
		"proposal": p.Text,
		"note": fmt.Sprintf("Nothing has started: the spawn awaits the person's confirmation, which only they can give (in the chat, the panel or the API); "+
			"no tool confirms it, and calling a spawn tool again only makes another proposal. Show them the proposal text and end your turn. "+
			"If they confirm, it runs in the background and its result arrives as a [Subagent] message; if they decline, or it expires in %s, you are told the same way.",
			formatDuration(p.ExpiresAt.Sub(p.CreatedAt)))})
}

func (m *Manager) statusTool(ctx context.Context, a IDArgs) (tool.Result, error) {
	h, err := m.lookup(ctx, a.SubagentID)
	var amb *store.AmbiguousError
	if errors.As(err, &amb) {
		return tool.Errorf("subagent_status: %v", err), nil
	}
	if err == nil {
		st := h.Status()
		out := map[string]any{"status": st, "line": st.String()}
		if r, ok := h.Result(); ok {
			out["result"] = r
		}
		return jsonResult(out)
	}
	run, err := m.opt.Store.GetRun(ctx, a.SubagentID)
	if err != nil {
		return tool.Errorf("subagent_status: %v", err), nil
	}
	return jsonResult(map[string]any{"id": run.ShortID, "role": run.Role, "task": run.Task, "status": run.Status,
		"tokens": run.Tokens, "cost_cents": run.CostCents, "iterations": run.Iterations, "result": json.RawMessage(orNull(run.Result))})
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// toolListLimit caps the runs list_subagents reads: the orchestrator's
// context is not the place for a long history.
const toolListLimit = 50

func (m *Manager) listTool(ctx context.Context, a ListArgs) (tool.Result, error) {
	f := RunFilter{Session: caller(ctx).SessionKey, Limit: toolListLimit}
	if !a.All {
		f.Status = lifecycle.Active
	}
	sts, err := m.Runs(ctx, f)
	if err != nil {
		return tool.Errorf("list_subagents: %v", err), nil
	}
	if len(sts) == 0 {
		return tool.Result{Output: "no subagents" + map[bool]string{true: "", false: " running or queued"}[a.All]}, nil
	}
	var b strings.Builder
	for _, st := range sts {
		b.WriteString(st.String())
		b.WriteByte('\n')
	}
	return tool.Result{Output: b.String()}, nil
}

func (m *Manager) cancelTool(ctx context.Context, a IDArgs) (tool.Result, error) {
	h, err := m.Cancel(a.SubagentID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return tool.Errorf("cancel_subagent: no subagent %s", a.SubagentID), nil
		}
		if errors.Is(err, ErrBusy) {
			return tool.Errorf("cancel_subagent: %v; stop it from that process (ava stop talks to the daemon)", err), nil
		}
		return tool.Errorf("cancel_subagent: %v", err), nil
	}
	return tool.Result{Output: fmt.Sprintf("cancel requested for %s (%s)", h.ID(), h.Role().Name)}, nil
}

func resultOf(r Result) (tool.Result, error) {
	res, err := jsonResult(r)
	res.IsError = r.Status != lifecycle.Success
	return res, err
}

func jsonResult(v any) (tool.Result, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return tool.Result{}, fmt.Errorf("marshal tool result: %w", err)
	}
	return tool.Result{Output: string(b)}, nil
}

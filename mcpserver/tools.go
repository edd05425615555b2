package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// SpawnArgs are spawn_subagent's arguments.
type SpawnArgs struct {
	Role          string  `json:"role" jsonschema:"the subagent's role (see the ava://roles/ resources): web_crawler, code_reviewer, data_extractor, researcher, or a custom role"`
	Task          string  `json:"task" jsonschema:"what the subagent must accomplish, stated so it can work without asking questions"`
	Context       string  `json:"context,omitempty" jsonschema:"background the subagent needs"`
	Model         string  `json:"model,omitempty" jsonschema:"override the role's model (provider/model or haiku, sonnet, opus; a scripted model only through an alias the operator configured)"`
	Timeout       float64 `json:"timeout,omitempty" jsonschema:"wall-clock limit in seconds (default: the role's, usually 600)"`
	MaxCostCents  float64 `json:"max_cost_cents,omitempty" jsonschema:"cost cap in US cents (default: the role's, usually 50)"`
	MaxTokens     int     `json:"max_tokens,omitempty" jsonschema:"token cap (default: the role's, usually 100000)"`
	MaxIterations int     `json:"max_iterations,omitempty" jsonschema:"cap on model calls (default: the role's, usually 20)"`
	Background    bool    `json:"background,omitempty" jsonschema:"true: return the subagent ID at once (follow it with subagent_status); false (default): wait for the result, with progress notifications"`
}

func (a SpawnArgs) config() subagent.Config {
	return subagent.Config{Role: a.Role, Task: a.Task, Context: a.Context, Model: a.Model, Timeout: a.Timeout,
		MaxCostCents: a.MaxCostCents, MaxTokens: a.MaxTokens, MaxIterations: a.MaxIterations}
}

// GroupArgs are spawn_subagents' arguments.
type GroupArgs struct {
	Mode        string      `json:"mode" jsonschema:"parallel: all tasks at once; chain: one after another, each given the previous result as context"`
	Tasks       []SpawnArgs `json:"tasks" jsonschema:"the subagents to start (their background field is ignored)"`
	BudgetCents float64     `json:"budget_cents,omitempty" jsonschema:"aggregate cost cap for the whole group in cents"`
	Timeout     float64     `json:"timeout,omitempty" jsonschema:"combined wall-clock limit for the whole group in seconds"`
	Background  bool        `json:"background,omitempty" jsonschema:"true: return the IDs at once; false (default): wait for every result"`
	Rationale   string      `json:"rationale,omitempty" jsonschema:"why this group is needed, in one sentence: shown to the person when the spawn needs their confirmation"`
}

// SendArgs are send_subagent's arguments.
type SendArgs struct {
	SubagentID string `json:"subagent_id" jsonschema:"the subagent's ID, S-xxxxxx (a unique prefix is enough)"`
	Message    string `json:"message" jsonschema:"the follow-up; the subagent resumes with its conversation intact"`
	Queue      bool   `json:"queue,omitempty" jsonschema:"if the subagent is still running, deliver the message when its current run ends instead of refusing"`
	Background bool   `json:"background,omitempty" jsonschema:"true: return at once; false (default): wait for the answer"`
}

// SpawnResult is spawn_subagent's and send_subagent's structured
// result: the subagent's result (seed 001), or, for a run that has not
// ended (background, queued) or a spawn that awaits the person's
// confirmation, its status and a note saying what happens next.
type SpawnResult struct {
	subagent.Result
	// QueuePosition is a queued run's place in line (1 = next).
	QueuePosition int `json:"queue_position,omitempty"`
	// PendingID is the proposal awaiting confirmation (status
	// awaiting_confirmation) or declined (status rejected).
	PendingID string `json:"pending_id,omitempty"`
	// Proposal is the proposal's text as shown to the person.
	Proposal string `json:"proposal,omitempty"`
	// Note says what happens next, in words.
	Note string `json:"note,omitempty"`
}

// GroupResult is spawn_subagents' structured result.
type GroupResult struct {
	GroupID     string            `json:"group_id,omitempty"`
	Mode        string            `json:"mode"`
	Status      string            `json:"status"`
	SubagentIDs []string          `json:"subagent_ids,omitempty"`
	SpentCents  float64           `json:"spent_cents,omitempty"`
	Results     []subagent.Result `json:"results,omitempty"`
	PendingID   string            `json:"pending_id,omitempty"`
	Proposal    string            `json:"proposal,omitempty"`
	Note        string            `json:"note,omitempty"`
}

// Statuses of a spawn that did not start.
const (
	// StatusAwaiting is a spawn that awaits the person's confirmation.
	StatusAwaiting lifecycle.Status = "awaiting_confirmation"
	// StatusRejected is a spawn the person declined.
	StatusRejected lifecycle.Status = "rejected"
)

// schemaFor infers T's schema; a json.RawMessage (a result's output)
// may be any JSON value (a schema object with only a description, not
// the schema true, which some clients do not take as a property).
func schemaFor[T any]() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Description: "the subagent's output: the JSON object it returned (output_format json), or its answer's text (text)"},
	}})
	if err != nil {
		return nil, fmt.Errorf("mcpserver: schema of %T: %w", *new(T), err)
	}
	return s, nil
}

// OutputSchemas returns the output schemas of spawn_subagent (also
// send_subagent's) and spawn_subagents.
func OutputSchemas() (spawn, group *jsonschema.Schema, err error) {
	if spawn, err = schemaFor[SpawnResult](); err != nil {
		return nil, nil, err
	}
	group, err = schemaFor[GroupResult]()
	return spawn, group, err
}

func (s *Server) addTools() error {
	spawnOut, groupOut, err := OutputSchemas()
	if err != nil {
		return err
	}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "spawn_subagent", OutputSchema: spawnOut,
		Description: "Spawn one Ava subagent: a focused agent with a role (its tools, model and limits) that works on the task until it is done or reaches a limit, " +
			"and returns a structured result (status, summary, output, confidence, tokens, cost, duration). Waits for the result, sending progress notifications, " +
			"unless background is true; cancelling the call cancels the subagent. Roles: " + s.roleSummary()}, s.spawnSubagent)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "spawn_subagents", OutputSchema: groupOut,
		Description: "Spawn several subagents as a group: parallel (all at once; tasks beyond the free slots wait in line) or chain (each step gets the previous step's result as context), " +
			"with an optional aggregate budget and combined timeout. Waits for every result unless background is true; cancelling the call cancels the group."}, s.spawnSubagents)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "send_subagent", OutputSchema: spawnOut,
		Description: "Send a follow-up to a finished subagent: it resumes with its conversation intact and answers with a new structured result. " +
			"A running subagent refuses it unless queue is true. Waits for the answer unless background is true."}, s.sendSubagent)
	for _, name := range []string{"subagent_status", "list_subagents", "cancel_subagent", "read_ava_logs"} {
		t, ok := s.tools[name]
		if !ok {
			return fmt.Errorf("mcpserver: no %s tool", name)
		}
		desc := t.Description()
		if name == "list_subagents" {
			desc = "List the subagents this MCP session started: running and queued ones (with their place in the queue), or with all=true also the finished ones."
		}
		s.mcp.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: t.Schema()}, s.forward(t))
	}
	return nil
}

// roleSummary names the roles with their descriptions.
func (s *Server) roleSummary() string {
	out := ""
	for i, r := range subagent.SortedRoles(s.in.Subagent.Roles()) {
		if i > 0 {
			out += "; "
		}
		out += r.SummaryText()
	}
	return out
}

// caller is the MCP session as the calling agent: the person's main
// session ava:mcp:<id>.
func (s *Server) caller(ss *mcp.ServerSession) tool.Caller {
	return tool.Caller{AgentID: event.OrchestratorID, SessionKey: s.parentKey(ss), User: s.opt.User, Workspace: s.in.Config.Workspace}
}

// forward serves an orchestrator tool over MCP, called as the MCP
// session's caller: its text is the result, its failure an error result.
func (s *Server) forward(t tool.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := json.RawMessage(req.Params.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		res, err := t.Run(tool.WithCaller(ctx, s.caller(req.Session)), args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name(), err)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Output}}, IsError: res.IsError}, nil
	}
}

// spawnSubagent is spawn_subagent: the person's spawn, through the
// session service like `ava spawn`.
func (s *Server) spawnSubagent(ctx context.Context, req *mcp.CallToolRequest, a SpawnArgs) (*mcp.CallToolResult, SpawnResult, error) {
	if err := s.accepting(); err != nil {
		return nil, SpawnResult{}, err
	}
	cfg := a.config()
	if err := cfg.Validate(); err != nil {
		return nil, SpawnResult{}, fmt.Errorf("spawn_subagent: %w", err)
	}
	ask, resumed, err := s.answered(ctx, req)
	if err != nil {
		return nil, SpawnResult{}, fmt.Errorf("spawn_subagent: %w", err)
	}
	var h *subagent.Handle
	if !resumed {
		// The run outlives this request when it runs in the background;
		// a waited one is cancelled explicitly when the request is.
		var p *subagent.Proposal
		h, p, err = s.in.Sessions.Spawn(context.WithoutCancel(ctx), s.parentKey(req.Session), cfg, s.opt.User)
		if err != nil {
			return nil, SpawnResult{}, err
		}
		if p != nil {
			if ask, err = s.propose(ctx, req, *p); err != nil {
				return nil, SpawnResult{}, err
			}
		}
	}
	switch {
	case ask.input != nil:
		return ask.input, SpawnResult{}, nil
	case ask.waiting != nil:
		h = ask.waiting
	case ask.started != nil:
		if h, err = s.in.Subagent.Get(ask.started.SubagentIDs[0]); err != nil {
			return nil, SpawnResult{}, fmt.Errorf("spawn_subagent: confirmed %s: %w", ask.started.SubagentIDs[0], err)
		}
	case h == nil:
		return nil, ask.out, nil
	}
	return s.finish(ctx, req, h, a.Background, s.newAsker(req, true))
}

// sendSubagent is send_subagent: a follow-up through the manager's
// follow-up path (what `ava send` and POST /api/chat use).
func (s *Server) sendSubagent(ctx context.Context, req *mcp.CallToolRequest, a SendArgs) (*mcp.CallToolResult, SpawnResult, error) {
	if err := s.accepting(); err != nil {
		return nil, SpawnResult{}, err
	}
	h, err := s.in.Subagent.Send(context.WithoutCancel(ctx), a.SubagentID, a.Message, a.Queue)
	if err != nil {
		return nil, SpawnResult{}, fmt.Errorf("send_subagent: %w", err)
	}
	return s.finish(ctx, req, h, a.Background, s.newAsker(req, false))
}

// finish returns a started run's result: at once (background) or when
// it ends, with progress notifications and its questions to the client
// (ask) meanwhile; a cancelled request cancels the run.
func (s *Server) finish(ctx context.Context, req *mcp.CallToolRequest, h *subagent.Handle, background bool, ask *asker) (*mcp.CallToolResult, SpawnResult, error) {
	if background {
		st := h.Status()
		out := SpawnResult{Result: subagent.Result{SubagentID: h.ID(), Status: st.Status, OutputFormat: "none"},
			QueuePosition: st.QueuePosition,
			Note:          "runs in the background: follow it with subagent_status " + h.ID() + " (its result is there when it ends); cancel it with cancel_subagent"}
		if st.Status == lifecycle.Queued {
			out.Note = fmt.Sprintf("queued (#%d in line): every slot is taken; it starts when one frees. Follow it with subagent_status %s", st.QueuePosition, h.ID())
		}
		return nil, out, nil
	}
	input, err := s.follow(ctx, req, h.Done(), func() []*subagent.Handle { return []*subagent.Handle{h} }, ask)
	if err != nil {
		h.Cancel()
		s.settle(h.Done())
		if !errors.Is(err, ErrShuttingDown) {
			return nil, SpawnResult{}, fmt.Errorf("%s cancelled: %w", h.ID(), err)
		}
	}
	if input != nil {
		return input, SpawnResult{}, nil // comes again with the answer
	}
	out := SpawnResult{Result: ended(h)}
	if err != nil || out.Status == lifecycle.Interrupted {
		out.Note = "the server shut down while this subagent ran: it was stopped and its end recorded; ask subagent_status " + h.ID() + " later (a resumable role resumes at the next start)"
	}
	return &mcp.CallToolResult{IsError: out.Status != lifecycle.Success}, out, nil
}

// ended is h's result once it has ended, or its status when it has no
// result (a run left to resume at the next start).
func ended(h *subagent.Handle) subagent.Result {
	if r, ok := h.Result(); ok {
		return r
	}
	st := h.Status()
	return subagent.Result{SubagentID: h.ID(), Status: st.Status, Output: json.RawMessage("null"), OutputFormat: "none"}
}

// settle waits a little for a cancelled run to record its end, so that
// a status asked for right after the cancellation shows it.
func (s *Server) settle(done <-chan struct{}) {
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.log.Warn("a cancelled subagent has not ended after 10 s")
	}
}

// spawnSubagents is spawn_subagents.
func (s *Server) spawnSubagents(ctx context.Context, req *mcp.CallToolRequest, a GroupArgs) (*mcp.CallToolResult, GroupResult, error) {
	if err := s.accepting(); err != nil {
		return nil, GroupResult{}, err
	}
	greq := subagent.GroupRequest{Mode: subagent.Mode(a.Mode), BudgetCents: a.BudgetCents,
		Timeout: time.Duration(a.Timeout * float64(time.Second)), Background: a.Background}
	for _, t := range a.Tasks {
		c := t.config()
		if err := c.Validate(); err != nil {
			return nil, GroupResult{}, fmt.Errorf("spawn_subagents: task %d: %w", len(greq.Configs)+1, err)
		}
		greq.Configs = append(greq.Configs, c)
	}
	ask, resumed, err := s.answered(ctx, req)
	if err != nil {
		return nil, GroupResult{}, fmt.Errorf("spawn_subagents: %w", err)
	}
	var g *subagent.Group
	if !resumed {
		var p *subagent.Proposal
		g, p, err = s.in.Sessions.SpawnGroup(context.WithoutCancel(ctx), s.parentKey(req.Session), greq, s.opt.User, a.Rationale)
		if err != nil {
			return nil, GroupResult{}, err
		}
		if p != nil {
			if ask, err = s.propose(ctx, req, *p); err != nil {
				return nil, GroupResult{}, err
			}
		}
	}
	switch {
	case ask.input != nil:
		return ask.input, GroupResult{}, nil
	case ask.started != nil:
		return nil, GroupResult{GroupID: ask.started.GroupID, Mode: a.Mode, Status: string(lifecycle.Running), SubagentIDs: ask.started.SubagentIDs,
			Note: "confirmed: the group runs in the background; follow its members with subagent_status or list_subagents"}, nil
	case g == nil:
		out := ask.out
		return nil, GroupResult{Mode: a.Mode, Status: string(out.Status), PendingID: out.PendingID, Proposal: out.Proposal, Note: out.Note}, nil
	}
	ids := func() []string {
		var ids []string
		for _, h := range g.Handles() {
			ids = append(ids, h.ID())
		}
		return ids
	}
	if a.Background {
		return nil, GroupResult{GroupID: g.ID, Mode: a.Mode, Status: string(lifecycle.Running), SubagentIDs: ids(),
			Note: "runs in the background: follow its members with subagent_status or list_subagents"}, nil
	}
	if _, err := s.follow(ctx, req, g.Done(), g.Handles, s.newAsker(req, false)); err != nil {
		g.Cancel()
		s.settle(g.Done())
		if !errors.Is(err, ErrShuttingDown) {
			return nil, GroupResult{}, fmt.Errorf("group %s cancelled: %w", g.ID, err)
		}
	}
	rs, err := g.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return nil, GroupResult{}, fmt.Errorf("group %s: %w", g.ID, err)
	}
	status := lifecycle.Success
	for _, r := range rs {
		if r.Status != lifecycle.Success {
			status = r.Status
			break
		}
	}
	return &mcp.CallToolResult{IsError: status != lifecycle.Success}, GroupResult{GroupID: g.ID, Mode: a.Mode, Status: string(status),
		SubagentIDs: ids(), SpentCents: g.SpentCents(), Results: rs}, nil
}

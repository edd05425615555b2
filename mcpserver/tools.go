package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/lifecycle"
)

// SpawnArgs are spawn_subagent's arguments: the orchestrator's spawn
// tool's, one definition and one schema (ava.SpawnArgs).
type SpawnArgs = ava.SpawnArgs

// GroupArgs are spawn_subagents' arguments (ava.GroupArgs).
type GroupArgs = ava.GroupArgs

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
	ava.Result
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
	GroupID     string       `json:"group_id,omitempty"`
	Mode        string       `json:"mode"`
	Status      string       `json:"status"`
	SubagentIDs []string     `json:"subagent_ids,omitempty"`
	SpentCents  float64      `json:"spent_cents,omitempty"`
	Results     []ava.Result `json:"results,omitempty"`
	// Board is what the members shared (post_finding), oldest first.
	Board     []ava.Finding `json:"board,omitempty"`
	PendingID string        `json:"pending_id,omitempty"`
	Proposal  string        `json:"proposal,omitempty"`
	Note      string        `json:"note,omitempty"`
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
			"unless background is true; cancelling the call cancels the subagent. context_mode fork is the orchestrator's only: an MCP call has no Ava conversation to fork. " +
			"Roles (also the ava://roles/ resources): " + s.roleSummary()}, s.spawnSubagent)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "spawn_subagents", OutputSchema: groupOut,
		Description: "Spawn several subagents as a group: parallel (all at once; tasks beyond the free slots wait in line) or chain (each step gets the previous step's result as context), " +
			"with an optional aggregate budget and combined timeout. Waits for every result unless background is true; cancelling the call cancels the group. The members share a board (post_finding, read_findings); the result carries it."}, s.spawnSubagents)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "send_subagent", OutputSchema: spawnOut,
		Description: "Send a follow-up to a finished subagent: it resumes with its conversation intact and answers with a new structured result. " +
			"A running subagent refuses it unless queue is true. Waits for the answer unless background is true."}, s.sendSubagent)
	if err := s.addStatusTools(); err != nil {
		return err
	}
	t := s.logs
	s.mcp.AddTool(&mcp.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.Schema()}, s.forward(t))
	return nil
}

// roleSummary names the roles with their descriptions.
func (s *Server) roleSummary() string {
	parts := []string{}
	for _, r := range s.rt.Roles() {
		parts = append(parts, r.SummaryText())
	}
	return strings.Join(parts, "; ")
}

// session is the MCP session's parent session key, created in the store
// before its first spawn.
func (s *Server) session(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
	key := s.parentKey(req.Session)
	return key, s.rt.EnsureSession(ctx, key)
}

// spawnSubagent is spawn_subagent: the person's spawn through the
// runtime, like `ava spawn` and POST /api/subagents.
func (s *Server) spawnSubagent(ctx context.Context, req *mcp.CallToolRequest, a SpawnArgs) (*mcp.CallToolResult, SpawnResult, error) {
	res, out, err := s.spawnOne(ctx, req, a)
	return res, out, s.toolError("spawn_subagent", err)
}

func (s *Server) spawnOne(ctx context.Context, req *mcp.CallToolRequest, a SpawnArgs) (*mcp.CallToolResult, SpawnResult, error) {
	if err := s.accepting(); err != nil {
		return nil, SpawnResult{}, err
	}
	cfg := a.Config()
	if err := ava.CheckSpawn(cfg); err != nil {
		return nil, SpawnResult{}, err
	}
	ask, resumed, err := s.answered(ctx, req)
	if err != nil {
		return nil, SpawnResult{}, err
	}
	var id string
	if !resumed {
		// Not in the background: a waited spawn's result is this call's
		// answer, not a message in the MCP session's history; the call
		// cancels the run when it is cancelled.
		parent, err := s.session(ctx, req)
		if err != nil {
			return nil, SpawnResult{}, err
		}
		sp, err := s.rt.Spawn(ctx, ava.SpawnRequest{Parent: parent, Config: cfg, User: s.opt.User, Rationale: a.Rationale})
		if err != nil {
			return nil, SpawnResult{}, err
		}
		if sp.Proposal != nil {
			if ask, err = s.propose(ctx, req, *sp.Proposal); err != nil {
				return nil, SpawnResult{}, err
			}
		} else {
			id = sp.Subagent.ID
		}
	}
	switch {
	case ask.input != nil:
		return ask.input, SpawnResult{}, nil
	case ask.waiting != "":
		id = ask.waiting
	case ask.started != nil:
		id = ask.started.SubagentIDs[0]
	case id == "":
		return nil, ask.out, nil
	}
	return s.finish(ctx, req, id, a.Background, s.newAsker(req, true))
}

// sendSubagent is send_subagent: a follow-up through the runtime (what
// `ava send` and POST /api/chat use).
func (s *Server) sendSubagent(ctx context.Context, req *mcp.CallToolRequest, a SendArgs) (*mcp.CallToolResult, SpawnResult, error) {
	if err := s.accepting(); err != nil {
		return nil, SpawnResult{}, s.toolError("send_subagent", err)
	}
	sa, err := s.rt.FollowUp(ctx, a.SubagentID, a.Message, a.Queue, false)
	if err != nil {
		return nil, SpawnResult{}, s.toolError("send_subagent", err)
	}
	res, out, err := s.finish(ctx, req, sa.ID, a.Background, s.newAsker(req, false))
	return res, out, s.toolError("send_subagent", err)
}

// finish returns a started run's result: at once (background) or when
// it ends, with progress notifications and its questions to the client
// (ask) meanwhile; a cancelled request cancels the run.
func (s *Server) finish(ctx context.Context, req *mcp.CallToolRequest, id string, background bool, ask *asker) (*mcp.CallToolResult, SpawnResult, error) {
	if background {
		sa, err := s.rt.Subagent(ctx, id)
		if err != nil {
			return nil, SpawnResult{}, err
		}
		out := SpawnResult{Result: ava.Result{SubagentID: sa.ID, Status: sa.Status, OutputFormat: "none"}, QueuePosition: sa.QueuePosition,
			Note: "runs in the background: follow it with subagent_status " + sa.ID + " (its result is there when it ends); cancel it with cancel_subagent"}
		if sa.Status == lifecycle.Queued {
			out.Note = fmt.Sprintf("queued (#%d in line): every slot is taken; it starts when one frees. Follow it with subagent_status %s", sa.QueuePosition, sa.ID)
		}
		return nil, out, nil
	}
	done, stop := s.whenEnded(ctx, id)
	defer stop()
	input, err := s.follow(ctx, req, done, func() []ava.Subagent { return s.views(ctx, id) }, ask)
	if err != nil {
		s.cancelRun(ctx, id)
		if !errors.Is(err, ErrShuttingDown) {
			return nil, SpawnResult{}, fmt.Errorf("%s cancelled: %w", id, err)
		}
	}
	if input != nil {
		return input, SpawnResult{}, nil // comes again with the answer
	}
	sa, serr := s.rt.Subagent(context.WithoutCancel(ctx), id)
	if serr != nil {
		return nil, SpawnResult{}, serr
	}
	out := SpawnResult{Result: ended(sa)}
	if err != nil || out.Status == lifecycle.Interrupted {
		out.Note = "the server shut down while this subagent ran: it was stopped and its end recorded; ask subagent_status " + id + " later (a resumable role resumes at the next start)"
	}
	return &mcp.CallToolResult{IsError: out.Status != lifecycle.Success}, out, nil
}

// whenEnded returns a channel closed when the run id has ended (its
// current turn), and stop, which ends the wait and its goroutine.
func (s *Server) whenEnded(ctx context.Context, id string) (<-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		// A failure other than the call's end is read again by the caller.
		if _, err := s.rt.Wait(ctx, id); err == nil || ctx.Err() == nil {
			close(done)
		}
	}()
	return done, func() { cancel(); <-ended }
}

// views are the runs ids as every surface shows them (a run that cannot
// be read now is left out of this look).
func (s *Server) views(ctx context.Context, ids ...string) []ava.Subagent {
	out := make([]ava.Subagent, 0, len(ids))
	for _, id := range ids {
		if sa, err := s.rt.Subagent(ctx, id); err == nil {
			out = append(out, sa)
		}
	}
	return out
}

// cancelRun cancels the run id of a call that ended early, and waits a
// little for it to record its end, so that a status asked for right
// after the cancellation shows it.
func (s *Server) cancelRun(ctx context.Context, id string) {
	ctx = context.WithoutCancel(ctx)
	if _, err := s.rt.Cancel(ctx, id); err != nil {
		s.log.Warn("cancel the subagent of a cancelled call", "subagent", id, "err", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	if _, err := s.rt.Wait(wctx, id); err != nil {
		s.log.Warn("a cancelled subagent has not ended", "subagent", id, "after", settleWait)
	}
}

// settleWait is how long a cancelled call waits for its runs to record
// their ends.
const settleWait = 10 * time.Second

// ended is the result of a run that has ended, or its status when it has
// no result (a run left to resume at the next start).
func ended(sa ava.Subagent) ava.Result {
	if sa.Result != nil {
		return *sa.Result
	}
	return ava.Result{SubagentID: sa.ID, Status: sa.Status, Output: json.RawMessage("null"), OutputFormat: "none", Error: sa.Error}
}

// spawnSubagents is spawn_subagents.
func (s *Server) spawnSubagents(ctx context.Context, req *mcp.CallToolRequest, a GroupArgs) (*mcp.CallToolResult, GroupResult, error) {
	res, out, err := s.spawnGroup(ctx, req, a)
	return res, out, s.toolError("spawn_subagents", err)
}

// groupRequest is the group a's arguments ask for, each task checked
// as a spawn is (ava.CheckSpawn), before the person is asked.
func groupRequest(a GroupArgs) (ava.GroupRequest, error) {
	for i, t := range a.Tasks {
		if err := ava.CheckSpawn(t.Config()); err != nil {
			return ava.GroupRequest{}, fmt.Errorf("task %d: %w", i+1, err)
		}
	}
	return a.Request(), nil
}

func (s *Server) spawnGroup(ctx context.Context, req *mcp.CallToolRequest, a GroupArgs) (*mcp.CallToolResult, GroupResult, error) {
	if err := s.accepting(); err != nil {
		return nil, GroupResult{}, err
	}
	greq, err := groupRequest(a)
	if err != nil {
		return nil, GroupResult{}, err
	}
	ask, resumed, err := s.answered(ctx, req)
	if err != nil {
		return nil, GroupResult{}, err
	}
	var g *ava.Group
	if !resumed {
		parent, err := s.session(ctx, req)
		if err != nil {
			return nil, GroupResult{}, err
		}
		sp, err := s.rt.SpawnGroup(ctx, parent, greq, s.opt.User, a.Rationale)
		if err != nil {
			return nil, GroupResult{}, err
		}
		g = sp.Group
		if sp.Proposal != nil {
			if ask, err = s.propose(ctx, req, *sp.Proposal); err != nil {
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
	if a.Background {
		return nil, GroupResult{GroupID: g.ID(), Mode: a.Mode, Status: string(lifecycle.Running), SubagentIDs: memberIDs(g),
			Note: "runs in the background: follow its members with subagent_status or list_subagents"}, nil
	}
	return s.waitGroup(ctx, req, g, a.Mode)
}

// waitGroup follows a waited group to its end and returns its results.
func (s *Server) waitGroup(ctx context.Context, req *mcp.CallToolRequest, g *ava.Group, mode string) (*mcp.CallToolResult, GroupResult, error) {
	if _, err := s.follow(ctx, req, g.Done(), g.Members, s.newAsker(req, false)); err != nil {
		g.Cancel()
		s.settle(g.Done())
		if !errors.Is(err, ErrShuttingDown) {
			return nil, GroupResult{}, fmt.Errorf("group %s cancelled: %w", g.ID(), err)
		}
	}
	rs, err := g.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return nil, GroupResult{}, fmt.Errorf("group %s: %w", g.ID(), err)
	}
	status := lifecycle.Success
	for _, r := range rs {
		if r.Status != lifecycle.Success {
			status = r.Status
			break
		}
	}
	board, err := g.Board(context.WithoutCancel(ctx))
	if err != nil {
		s.log.Warn("the group's board could not be read; its result goes without it", "group", g.ID(), "err", err)
	}
	return &mcp.CallToolResult{IsError: status != lifecycle.Success}, GroupResult{GroupID: g.ID(), Mode: mode, Status: string(status),
		SubagentIDs: memberIDs(g), SpentCents: g.SpentCents(), Results: rs, Board: board}, nil
}

// settle waits a little for a cancelled group to end.
func (s *Server) settle(done <-chan struct{}) {
	select {
	case <-done:
	case <-time.After(settleWait):
		s.log.Warn("a cancelled group has not ended", "after", settleWait)
	}
}

// memberIDs are the IDs of g's members so far.
func memberIDs(g *ava.Group) []string {
	var ids []string
	for _, m := range g.Members() {
		ids = append(ids, m.ID)
	}
	return ids
}

package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava"
)

// A subagent's question (ask_user) reaches the MCP client that waits for
// it, when the client supports elicitation: with an elicitation request
// during the call (protocols before 2026-07-28), or by returning it as an
// input request that the call comes again with (later ones; only
// spawn_subagent, whose repeated call waits on for the same subagent).
// Otherwise, and for background runs, it is answered through the API or
// the panel like any other.

// answerField is the one field of a question's form; questionInput is
// the ID of the question among a result's input requests.
const (
	answerField   = "answer"
	questionInput = "question"
)

// questionSchema is a question's form: one free-text answer.
var questionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		answerField: map[string]any{"type": "string", "title": "Your answer", "description": "goes back to the subagent as its tool's result"},
	},
	"required": []string{answerField},
}

// asker puts the questions of a waited call's subagents to its client.
type asker struct {
	s   *Server
	req *mcp.CallToolRequest
	// rounds allows answering by input requests (spawn_subagent).
	rounds bool
	asked  map[string]bool
	// Elicitation requests in flight (older protocols): each in its own
	// goroutine, so that the call's progress and its end go on; stop
	// cancels those still waiting and waits for them.
	wg     sync.WaitGroup
	cancel context.CancelFunc
	ctx    context.Context
}

// newAsker returns the call's asker, or nil when its client cannot be
// asked.
func (s *Server) newAsker(req *mcp.CallToolRequest, rounds bool) *asker {
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return nil
	}
	if req.ProtocolVersion() >= multiRoundTrip && !rounds {
		return nil
	}
	return &asker{s: s, req: req, rounds: rounds, asked: map[string]bool{}}
}

// poll asks the client each new open question of runs: inline, or as
// the returned input result (the call ends and comes again).
func (a *asker) poll(ctx context.Context, runs []ava.Subagent) (*mcp.CallToolResult, error) {
	if a == nil {
		return nil, nil
	}
	ids := map[string]bool{}
	for _, sa := range runs {
		ids[sa.ID] = true
	}
	for _, q := range a.s.rt.Questions(a.s.parentKey(a.req.Session)) {
		if !ids[q.SubagentID] || a.asked[q.ID] {
			continue
		}
		a.asked[q.ID] = true
		params := &mcp.ElicitParams{Mode: "form", RequestedSchema: questionSchema,
			Message: fmt.Sprintf("Subagent %s (%s) asks:\n%s", q.SubagentID, q.Role, q.Text)}
		if a.req.ProtocolVersion() >= multiRoundTrip {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{questionInput: params},
				RequestState: a.s.sign(a.req.Session, q.ID+"/"+q.SubagentID)}, nil
		}
		if a.ctx == nil {
			a.ctx, a.cancel = context.WithCancel(ctx)
		}
		id := q.ID
		a.wg.Go(func() {
			res, err := a.req.Session.Elicit(a.ctx, params)
			if err != nil {
				a.s.log.Debug("elicit a subagent's question", "question", id, "err", err)
				return // it stays open for the API and the panel
			}
			a.answer(id, res)
		})
	}
	return nil, nil
}

// stop cancels the elicitation requests still waiting (the call ends)
// and waits for their goroutines.
func (a *asker) stop() {
	if a == nil || a.cancel == nil {
		return
	}
	a.cancel()
	a.wg.Wait()
}

// answer applies the client's answer to a question; a declined or
// dismissed one stays open (for the API, the panel, or its limit).
func (a *asker) answer(id string, res *mcp.ElicitResult) {
	text, _ := res.Content[answerField].(string)
	if res.Action != "accept" || strings.TrimSpace(text) == "" {
		return
	}
	if _, err := a.s.rt.Answer(a.s.parentKey(a.req.Session), id, text); err != nil {
		a.s.log.Debug("answer a subagent's question", "question", id, "err", err)
	}
}

// answeredQuestion handles spawn_subagent coming again with the answer to
// a question (request state "Q-…/S-…"): the answer goes to the subagent,
// and the call waits on for it (its ID is returned).
func (s *Server) answeredQuestion(req *mcp.CallToolRequest, state string) (string, error) {
	qid, sid, _ := strings.Cut(state, "/")
	if res, _ := req.Params.InputResponses[questionInput].(*mcp.ElicitResult); res != nil {
		a := &asker{s: s, req: req}
		a.answer(qid, res)
	}
	if sid == "" {
		return "", fmt.Errorf("%w: the request state names no subagent", ava.ErrInvalid)
	}
	return sid, nil
}

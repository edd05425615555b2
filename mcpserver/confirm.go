package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/subagent"
)

// startField is the one field of the confirmation form; confirmInput
// is the ID of the confirmation among a result's input requests.
const (
	startField   = "start"
	confirmInput = "confirm"
)

// multiRoundTrip is the first protocol version in which a server asks
// the client during a request by returning input requests (SEP-2322)
// instead of sending an elicitation request.
const multiRoundTrip = "2026-07-28"

// confirmSchema is the elicitation's form: one yes-or-no question.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		startField: map[string]any{"type": "boolean", "title": "Start it?", "description": "yes starts the spawn as proposed; no drops it", "default": true},
	},
	"required": []string{startField},
}

// asked is how a spawn the confirmation policy made a proposal went on.
type asked struct {
	// input, when set, is the result that asks the client (multi round
	// trip); the call comes again with the answer.
	input *mcp.CallToolResult
	// started is what the person's yes started.
	started *subagent.Decided
	// out says why nothing started (declined, or awaiting confirmation).
	out SpawnResult
	// waiting is the subagent a call that came again with the answer to
	// its question waits on (questions.go).
	waiting *subagent.Handle
}

// propose asks the person about proposal p: with an elicitation request
// during the call (protocols before 2026-07-28), or by returning it as
// an input request (later ones); a client that supports neither gets a
// result saying that nothing started and where to confirm.
func (s *Server) propose(ctx context.Context, req *mcp.CallToolRequest, p subagent.Proposal) (asked, error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return asked{out: pendingResult(p, "this MCP client cannot ask them (it does not support elicitation), so the policy's answer stands: not started until confirmed")}, nil
	}
	params := &mcp.ElicitParams{Mode: "form", Message: p.Text + "\n\nStart it?", RequestedSchema: confirmSchema}
	if req.ProtocolVersion() >= multiRoundTrip {
		return asked{input: &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmInput: params},
			RequestState: s.sign(req.Session, p.ID)}}, nil
	}
	res, err := req.Session.Elicit(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			s.withdraw(ctx, p)
		}
		return asked{}, fmt.Errorf("ask to confirm %s: %w", p.ID, err)
	}
	return s.decide(ctx, p, res)
}

// answered handles a call that comes again with the answer to its
// confirmation question (multi round trip); ok is false for a first
// call.
func (s *Server) answered(ctx context.Context, req *mcp.CallToolRequest) (a asked, ok bool, err error) {
	state := req.Params.RequestState
	if state == "" {
		return asked{}, false, nil
	}
	id, valid := s.verify(req.Session, state)
	if !valid {
		return asked{}, true, errors.New("the request state is not one this server gave this session")
	}
	if strings.HasPrefix(id, "Q-") {
		h, err := s.answeredQuestion(req, id)
		return asked{waiting: h}, true, err
	}
	p, err := s.in.Subagent.Proposal(ctx, id)
	if err != nil {
		return asked{}, true, fmt.Errorf("proposal %s: %w", id, err)
	}
	res, _ := req.Params.InputResponses[confirmInput].(*mcp.ElicitResult)
	if res == nil {
		return asked{}, true, fmt.Errorf("no answer to the confirmation of %s", id)
	}
	a, err = s.decide(ctx, p, res)
	return a, true, err
}

// decide applies the person's answer to p: yes starts it, no drops it,
// and a dismissed question leaves it pending. The decision is recorded
// like one made in the chat or the panel.
func (s *Server) decide(ctx context.Context, p subagent.Proposal, res *mcp.ElicitResult) (asked, error) {
	ctx = context.WithoutCancel(ctx)
	yes, _ := res.Content[startField].(bool)
	switch {
	case res.Action == "accept" && yes:
		d, err := s.in.Subagent.Decide(ctx, p.ID, confirm.Confirmed, confirm.Change{})
		if err != nil {
			return asked{}, fmt.Errorf("confirm %s: %w", p.ID, err)
		}
		if len(d.SubagentIDs) == 0 {
			return asked{}, fmt.Errorf("confirm %s: nothing started", p.ID)
		}
		return asked{started: &d}, nil
	case res.Action == "accept" || res.Action == "decline":
		if _, err := s.in.Subagent.Decide(ctx, p.ID, confirm.Rejected, confirm.Change{}); err != nil {
			return asked{}, fmt.Errorf("decline %s: %w", p.ID, err)
		}
		return asked{out: SpawnResult{Result: subagent.Result{Status: StatusRejected, OutputFormat: "none"}, PendingID: p.ID,
			Proposal: p.Text, Note: "Not started: the person declined the spawn."}}, nil
	}
	return asked{out: pendingResult(p, "the person dismissed the question, so it still awaits their answer")}, nil
}

// withdraw drops proposal p when the call that asks about it is
// cancelled (by its client, the session's end or the shutdown): the SDK
// tells the client that its question is cancelled, and the proposal
// does not stay pending behind it. One already decided elsewhere (the
// panel, the API) stays as decided.
func (s *Server) withdraw(ctx context.Context, p subagent.Proposal) {
	if _, err := s.in.Subagent.Decide(context.WithoutCancel(ctx), p.ID, confirm.Rejected, confirm.Change{}); err != nil {
		s.log.Debug("withdraw a cancelled call's proposal", "proposal", p.ID, "err", err)
		return
	}
	s.log.Info("proposal withdrawn: the call asking about it was cancelled", "proposal", p.ID, "cause", context.Cause(ctx))
}

// pendingResult says that nothing started, why, and where to confirm.
func pendingResult(p subagent.Proposal, why string) SpawnResult {
	return SpawnResult{Result: subagent.Result{Status: StatusAwaiting, OutputFormat: "none"}, PendingID: p.ID, Proposal: p.Text,
		Note: fmt.Sprintf("Nothing has started: the confirmation policy (AVA_CONFIRM) asks the person before this spawn, and %s. "+
			"Confirm %s in the web panel or with POST /api/spawns/%s/confirm on the daemon (ava serve) before it expires (%s); "+
			"or set AVA_CONFIRM=never (or above:<cents>) for this server to start spawns without asking.",
			why, p.ID, p.ID, p.ExpiresAt.Format("15:04:05 MST"))}
}

// sign makes the request state of a confirmation question: the
// proposal's ID, bound to the MCP session by a MAC, so that a client
// cannot answer another session's proposal.
func (s *Server) sign(ss *mcp.ServerSession, id string) string {
	m := hmac.New(sha256.New, s.salt)
	m.Write([]byte(id + "|" + s.parentKey(ss)))
	return id + "." + hex.EncodeToString(m.Sum(nil)[:16])
}

// verify returns the proposal ID of a request state sign made for ss.
func (s *Server) verify(ss *mcp.ServerSession, state string) (string, bool) {
	id, _, ok := strings.Cut(state, ".")
	return id, ok && hmac.Equal([]byte(state), []byte(s.sign(ss, id)))
}

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

	"github.com/avaagent/ava"
)

// The confirmation form's fields: start (yes or no) and change, the
// person's change in words, which the server applies as the chat and
// Telegram do (ava.Runtime.DecideWords) — the proposal's text offers
// one. confirmInput is the ID of the confirmation among a result's
// input requests.
const (
	startField   = "start"
	changeField  = "change"
	confirmInput = "confirm"
)

// multiRoundTrip is the first protocol version in which a server asks
// the client during a request by returning input requests (SEP-2322)
// instead of sending an elicitation request.
const multiRoundTrip = "2026-07-28"

// maxAsks bounds how often one elicitation call asks about a proposal
// whose change the server could not read.
const maxAsks = 3

// confirmSchema is the elicitation's form: a yes or no, and an optional
// change in words.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		startField: map[string]any{"type": "boolean", "title": "Start it?", "description": "yes starts the spawn (with the change, if any); no drops it", "default": true},
		changeField: map[string]any{"type": "string", "title": "Change (optional)",
			"description": "a change before it starts, in words: \"use haiku\", \"max $1\", \"only 2 minutes\", \"50k tokens\", \"10 iterations\"; empty: as proposed"},
	},
	"required": []string{startField},
}

// asked is how a spawn the confirmation policy made a proposal went on.
type asked struct {
	// input, when set, is the result that asks the client (multi round
	// trip); the call comes again with the answer.
	input *mcp.CallToolResult
	// started is what the person's yes started.
	started *ava.Decided
	// out says why nothing started (declined, or awaiting confirmation).
	out SpawnResult
	// waiting is the subagent a call that came again with the answer to
	// its question waits on (questions.go).
	waiting string
	// again, when set, is why the person is asked again: their change
	// could not be read.
	again string
}

// propose asks the person about proposal p: with an elicitation request
// during the call (protocols before 2026-07-28), or by returning it as
// an input request (later ones); a client that supports neither gets a
// result saying that nothing started and where to confirm.
func (s *Server) propose(ctx context.Context, req *mcp.CallToolRequest, p ava.Proposal) (asked, error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return asked{out: pendingResult(p, "this MCP client cannot ask them (it does not support elicitation), so the policy's answer stands: not started until confirmed")}, nil
	}
	return s.ask(ctx, req, p, "")
}

// ask puts proposal p to the person (again, saying why, when again is
// set).
func (s *Server) ask(ctx context.Context, req *mcp.CallToolRequest, p ava.Proposal, again string) (asked, error) {
	for range maxAsks {
		params := confirmParams(p, again)
		if req.ProtocolVersion() >= multiRoundTrip {
			return asked{input: &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{confirmInput: params},
				RequestState: s.sign(req.Session, p.ID)}}, nil
		}
		res, err := req.Session.Elicit(ctx, params)
		if err != nil {
			if ctx.Err() != nil {
				s.withdraw(ctx, req, p)
			}
			return asked{}, fmt.Errorf("ask to confirm %s: %w", p.ID, err)
		}
		a, err := s.decide(ctx, req, p, res)
		if err != nil || a.again == "" {
			return a, err
		}
		again = a.again
	}
	return asked{out: pendingResult(p, fmt.Sprintf("the change could not be read after %d tries (%s)", maxAsks, again))}, nil
}

// confirmParams is the confirmation form for p.
func confirmParams(p ava.Proposal, again string) *mcp.ElicitParams {
	msg := p.Text + "\n\nStart it? (a change, if any, in the change field)"
	if again != "" {
		msg = again + "\n\n" + msg
	}
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: confirmSchema}
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
		return asked{}, true, fmt.Errorf("%w: the request state is not one this server gave this session", ava.ErrInvalid)
	}
	if strings.HasPrefix(id, "Q-") {
		sid, err := s.answeredQuestion(req, id)
		return asked{waiting: sid}, true, err
	}
	p, err := s.rt.Proposal(ctx, id)
	if err != nil {
		return asked{}, true, fmt.Errorf("proposal %s: %w", id, err)
	}
	res, _ := req.Params.InputResponses[confirmInput].(*mcp.ElicitResult)
	if res == nil {
		return asked{}, true, fmt.Errorf("%w: no answer to the confirmation of %s", ava.ErrInvalid, id)
	}
	a, err = s.decide(ctx, req, p, res)
	if err == nil && a.again != "" {
		a, err = s.ask(ctx, req, p, a.again)
	}
	return a, true, err
}

// decide applies the person's answer to p in the MCP session's name:
// yes starts it (with their change, read as the chat reads one), no
// drops it, and a dismissed question leaves it pending. A change the
// server cannot read decides nothing: the person is asked again.
func (s *Server) decide(ctx context.Context, req *mcp.CallToolRequest, p ava.Proposal, res *mcp.ElicitResult) (asked, error) {
	ctx = context.WithoutCancel(ctx)
	session := s.parentKey(req.Session)
	yes, _ := res.Content[startField].(bool)
	change, _ := res.Content[changeField].(string)
	change = strings.TrimSpace(change)
	if res.Action != "accept" && res.Action != "decline" {
		return asked{out: pendingResult(p, "the person dismissed the question, so it still awaits their answer")}, nil
	}
	var (
		d   ava.Decided
		err error
	)
	switch {
	case res.Action == "accept" && yes && change != "":
		d, err = s.rt.DecideWords(ctx, session, p.ID, change)
		if errors.Is(err, ava.ErrUnclear) {
			return asked{again: fmt.Sprintf("The change %q could not be read as one the server can apply.", change)}, nil
		}
	case res.Action == "accept" && yes:
		d, err = s.rt.Decide(ctx, session, p.ID, ava.Confirmed, ava.Change{})
	default:
		d, err = s.rt.Decide(ctx, session, p.ID, ava.Rejected, ava.Change{})
	}
	if err != nil {
		return asked{}, fmt.Errorf("decide %s: %w", p.ID, err)
	}
	if len(d.SubagentIDs) == 0 {
		return asked{out: SpawnResult{Result: ava.Result{Status: StatusRejected, OutputFormat: "none"}, PendingID: p.ID,
			Proposal: p.Text, Note: "Not started: the person declined the spawn."}}, nil
	}
	return asked{started: &d}, nil
}

// withdraw drops proposal p when the call that asks about it is
// cancelled (by its client, the session's end or the shutdown): the SDK
// tells the client that its question is cancelled, and the proposal
// does not stay pending behind it. One already decided elsewhere (the
// panel, the API) stays as decided.
func (s *Server) withdraw(ctx context.Context, req *mcp.CallToolRequest, p ava.Proposal) {
	if _, err := s.rt.Decide(context.WithoutCancel(ctx), s.parentKey(req.Session), p.ID, ava.Rejected, ava.Change{}); err != nil {
		s.log.Debug("withdraw a cancelled call's proposal", "proposal", p.ID, "err", err)
		return
	}
	s.log.Info("proposal withdrawn: the call asking about it was cancelled", "proposal", p.ID, "cause", context.Cause(ctx))
}

// pendingResult says that nothing started, why, and where to confirm.
func pendingResult(p ava.Proposal, why string) SpawnResult {
	return SpawnResult{Result: ava.Result{Status: StatusAwaiting, OutputFormat: "none"}, PendingID: p.ID, Proposal: p.Text,
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

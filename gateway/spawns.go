package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/gateway/client"
)

// listSpawns answers GET /api/spawns?status=pending[&sessionKey=K]: the
// proposals awaiting the person, oldest first.
func (s *Server) listSpawns(w http.ResponseWriter, r *http.Request) {
	if st := r.URL.Query().Get("status"); st != "" && st != "pending" {
		fail(w, badRequestf("status: %q: only pending proposals are listed", st))
		return
	}
	ps, err := s.rt.Proposals(r.Context(), r.URL.Query().Get("sessionKey"))
	if err != nil {
		fail(w, err)
		return
	}
	out := client.ProposalList{Proposals: []client.Proposal{}}
	for _, p := range ps {
		out.Proposals = append(out.Proposals, toClientProposal(p))
	}
	writeJSON(w, http.StatusOK, out)
}

// confirmSpawn answers POST /api/spawns/{id}/confirm.
func (s *Server) confirmSpawn(w http.ResponseWriter, r *http.Request) {
	if s.isDraining() {
		fail(w, errDraining)
		return
	}
	var req client.ConfirmRequest
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	id, err := pathID(r, "pending spawn")
	if err != nil {
		fail(w, err)
		return
	}
	var d ava.Decided
	switch {
	case req.Answer != "" && req.Decision == "":
		d, err = s.rt.DecideWords(r.Context(), "", id, req.Answer)
	default:
		dec, change, berr := decisionOf(req)
		if berr != nil {
			fail(w, berr)
			return
		}
		d, err = s.rt.Decide(r.Context(), "", id, dec, change)
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, client.Decided{Proposal: toClientProposal(d.Proposal), Decision: d.Decision, Change: d.Change,
		SubagentIDs: d.SubagentIDs, GroupID: d.GroupID})
}

// decisionOf reads a yes, no or modify decision.
func decisionOf(req client.ConfirmRequest) (ava.Decision, ava.Change, error) {
	if req.Answer != "" {
		return "", confirm.Change{}, badRequestf("give either decision or answer, not both")
	}
	var c ava.Change
	if req.Config != nil {
		c = ava.Change(*req.Config)
	}
	switch req.Decision {
	case client.DecisionYes, client.DecisionNo:
		if !c.IsZero() {
			return "", c, badRequestf("decision %q takes no config: use modify", req.Decision)
		}
		return map[string]ava.Decision{client.DecisionYes: ava.Confirmed, client.DecisionNo: ava.Rejected}[req.Decision], c, nil
	case client.DecisionModify:
		if c.IsZero() {
			return "", c, badRequestf("decision modify needs a config with a change (model, maxCostCents, timeoutSeconds, maxTokens, maxIterations)")
		}
		if c.MaxCostCents < 0 || c.TimeoutSeconds < 0 || c.MaxTokens < 0 || c.MaxIterations < 0 {
			return "", c, badRequestf("config: limits must be positive")
		}
		return ava.Modified, c, nil
	}
	return "", c, badRequestf("decision: %q, want yes, no or modify", req.Decision)
}

// toClientProposal converts through JSON: the two types share their
// wire form.
func toClientProposal(p ava.Proposal) client.Proposal {
	var out client.Proposal
	b, err := json.Marshal(p)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		out.ID, out.Text = p.ID, fmt.Sprintf("(proposal does not encode: %v)", err)
	}
	return out
}

package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
)

// toClientSubagent is a run's view in the API's wire form.
func toClientSubagent(sa ava.Subagent) client.Subagent {
	out := client.Subagent{ID: sa.ID, SessionKey: sa.SessionKey, Role: sa.Role, Task: sa.Task, Model: sa.Model, Mode: sa.Mode,
		Parent: sa.Parent, GroupID: sa.GroupID, Status: string(sa.Status), QueuePosition: sa.QueuePosition, Stalled: sa.Stalled,
		WaitingForUser: sa.WaitingForUser, Iteration: sa.Iterations, Tokens: sa.Tokens, CostCents: sa.CostCents,
		ElapsedMs: sa.Elapsed.Milliseconds(), WallMs: sa.Wall.Milliseconds(), Activity: sa.Activity, LastTool: sa.LastTool, CreatedAt: sa.CreatedAt,
		StartedAt: sa.StartedAt, EndedAt: sa.EndedAt, Error: sa.Error, Attempts: sa.Attempts, Live: sa.Live}
	if sa.Result != nil {
		out.Result, _ = json.Marshal(sa.Result)
	}
	for _, w := range sa.Waits {
		out.Waits = append(out.Waits, client.Wait{QuestionID: w.QuestionID, AskedAt: w.AskedAt, AnsweredAt: w.AnsweredAt, By: w.By})
	}
	return out
}

// statusFilter parses status=a,b; "active" stands for every active
// status.
func statusFilter(v string) ([]ava.Status, error) {
	var out []ava.Status
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "active":
			out = append(out, lifecycle.Active...)
		default:
			st, err := lifecycle.Parse(f)
			if err != nil {
				return nil, badRequestf("status: %v (or active)", err)
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// listSubagents answers GET /api/subagents?parent=K&status=S.
func (s *Server) listSubagents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	statuses, err := statusFilter(q.Get("status"))
	if err != nil {
		fail(w, err)
		return
	}
	parent := q.Get("parent")
	limit, err := listLimit(q.Get("limit"))
	if err != nil {
		fail(w, err)
		return
	}
	list, err := s.rt.Subagents(r.Context(), ava.SubagentFilter{Parent: parent, Status: statuses, Limit: limit})
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]client.Subagent, 0, len(list))
	for _, sa := range list {
		out = append(out, toClientSubagent(sa))
	}
	writeJSON(w, http.StatusOK, client.SubagentList{Subagents: out})
}

// getSubagent answers GET /api/subagents/{id} (an ID or unique prefix).
func (s *Server) getSubagent(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subagent")
	if err != nil {
		fail(w, err)
		return
	}
	sa, err := s.rt.Subagent(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toClientSubagent(sa))
}

// spawn answers POST /api/subagents: a background subagent (201), or,
// when the confirmation policy asks for it, a proposal (202).
func (s *Server) spawn(w http.ResponseWriter, r *http.Request) {
	if s.isDraining() {
		fail(w, errDraining)
		return
	}
	var req client.SpawnRequest
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	cfg := ava.SubagentConfig{Role: req.Role, Task: req.Task, Context: req.Context, Model: req.Model, Timeout: req.TimeoutSeconds,
		MaxCostCents: req.MaxCostCents, MaxTokens: req.MaxTokens, MaxIterations: req.MaxIterations}
	if len(req.Task) > maxMessage {
		fail(w, badRequestf("task: over %d bytes", maxMessage))
		return
	}
	// The spawn's records are written under the request's context (its
	// deadline, the client's connection): a spawn answered 503 or
	// abandoned by its client records nothing afterwards.
	res, err := s.rt.Spawn(r.Context(), ava.SpawnRequest{Parent: req.Parent, Config: cfg, User: req.User, Rationale: req.Rationale,
		Background: req.Parent != "", IdempotencyKey: r.Header.Get(client.IdempotencyKeyHeader)})
	if err != nil {
		fail(w, passedDeadline(r.Context(), err))
		return
	}
	if res.Replayed {
		w.Header().Set(client.IdempotentReplayedHeader, "true")
	}
	if res.Proposal != nil {
		writeJSON(w, http.StatusAccepted, map[string]client.Proposal{"pending": toClientProposal(*res.Proposal)})
		return
	}
	writeJSON(w, http.StatusCreated, toClientSubagent(*res.Subagent))
}

// DefaultListLimit is how many stored runs GET /api/subagents returns,
// newest first, unless ?limit= says otherwise (a daemon that ran for
// months holds many thousands).
const DefaultListLimit = ava.DefaultSubagentLimit

// listLimit reads ?limit= (1 to 10,000; default DefaultListLimit).
func listLimit(v string) (int, error) {
	if v == "" {
		return DefaultListLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > ava.MaxSubagentLimit {
		return 0, badRequestf("limit %q: want a number from 1 to 10000", v)
	}
	return n, nil
}

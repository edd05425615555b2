package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// toClient is a run's status on the wire: every figure is the read
// model's (subagent/figures.go), whether the run is live or stored.
func toClient(st subagent.RunStatus) client.Subagent {
	out := client.Subagent{ID: st.ID, SessionKey: store.SubagentSessionPrefix + st.ID, Role: st.Role, Task: st.Task, Model: st.Model,
		Mode: string(st.Mode), Parent: st.Parent, Status: string(st.Status), QueuePosition: st.QueuePosition, Stalled: st.Stalled,
		WaitingForUser: st.WaitingForUser, Iteration: st.Iteration, Tokens: st.Tokens, CostCents: st.CostCents,
		ElapsedMs: st.Elapsed.Milliseconds(), WallMs: st.Wall.Milliseconds(), Activity: st.Activity, LastTool: st.LastTool,
		CreatedAt: st.CreatedAt, StartedAt: st.StartedAt, EndedAt: st.EndedAt, Result: st.Result, Error: st.Error,
		Attempts: st.Attempts, Live: st.Live}
	return out
}

// statusFilter parses status=a,b; "active" stands for every active
// status.
func statusFilter(v string) ([]lifecycle.Status, error) {
	var out []lifecycle.Status
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

// listSubagents answers GET /api/subagents?parent=K&status=S&limit=N:
// subagent.Manager.Runs, the one list every surface shows.
func (s *Server) listSubagents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	statuses, err := statusFilter(q.Get("status"))
	if err != nil {
		fail(w, err)
		return
	}
	limit, err := listLimit(q.Get("limit"))
	if err != nil {
		fail(w, err)
		return
	}
	runs, err := s.in.Subagent.Runs(r.Context(), subagent.RunFilter{Session: q.Get("parent"), Status: statuses, Limit: limit})
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]client.Subagent, len(runs))
	for i, st := range runs {
		out[i] = toClient(st)
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
	st, err := s.in.Subagent.Run(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toClient(st))
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
	cfg := subagent.Config{Role: req.Role, Task: req.Task, Context: req.Context, Model: req.Model, Timeout: req.TimeoutSeconds,
		MaxCostCents: req.MaxCostCents, MaxTokens: req.MaxTokens, MaxIterations: req.MaxIterations}
	if err := cfg.Validate(); err != nil {
		fail(w, badRequestf("%v", err))
		return
	}
	if len(req.Task) > maxMessage {
		fail(w, badRequestf("task: over %d bytes", maxMessage))
		return
	}
	parent := ""
	if req.Parent != "" {
		t, err := s.resolve(r.Context(), req.Parent)
		if err != nil {
			fail(w, err)
			return
		}
		if t.subagentID != "" {
			fail(w, badRequestf("parent %s: %v: subagents cannot spawn subagents", req.Parent, tool.ErrForbidden))
			return
		}
		parent = t.key
	}
	caller := tool.Caller{AgentID: event.OrchestratorID, SessionKey: parent, Workspace: s.in.Config.Workspace}
	h, p, err := s.in.Subagent.SpawnOrPropose(context.WithoutCancel(r.Context()),
		subagent.Request{Config: cfg, Parent: caller, User: req.User, Background: parent != ""}, req.Rationale)
	if err != nil {
		fail(w, err)
		return
	}
	if p != nil {
		writeJSON(w, http.StatusAccepted, map[string]client.Proposal{"pending": toClientProposal(*p)})
		return
	}
	st, err := s.in.Subagent.Run(r.Context(), h.ID())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, toClient(st))
}

// listLimit reads ?limit= (1 to subagent.MaxListLimit; default
// subagent.DefaultListLimit).
func listLimit(v string) (int, error) {
	if v == "" {
		return subagent.DefaultListLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > subagent.MaxListLimit {
		return 0, badRequestf("limit %q: want a number from 1 to %d", v, subagent.MaxListLimit)
	}
	return n, nil
}

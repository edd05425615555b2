package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// fromHandle is a live run's view.
func fromHandle(h *subagent.Handle) client.Subagent {
	st := h.Status()
	out := client.Subagent{ID: st.ID, SessionKey: h.SessionKey(), Role: st.Role, Task: st.Task, Model: st.Model,
		Mode: string(st.Mode), Parent: st.Parent, Status: string(st.Status), QueuePosition: st.QueuePosition, Stalled: st.Stalled, WaitingForUser: st.WaitingForUser, Iteration: st.Iteration,
		Tokens: st.Tokens, CostCents: st.CostCents, ElapsedMs: st.Elapsed.Milliseconds(), Activity: st.Activity,
		LastTool: st.LastTool, StartedAt: st.StartedAt, Live: true}
	if r, ok := h.Result(); ok {
		out.Result, _ = json.Marshal(r)
		out.Error = r.Error
		if out.Tokens == 0 {
			out.Tokens, out.CostCents, out.Iteration = r.TokensUsed, r.CostCents, r.Iterations
		}
	}
	return out
}

// fromRun is a stored run's view.
func fromRun(r store.Run, now time.Time) client.Subagent {
	out := client.Subagent{ID: r.ShortID, SessionKey: r.SessionKey, Role: r.Role, Task: r.Task, Model: r.Model, Mode: r.Mode,
		Parent: r.ParentSession, Status: string(r.Status), Iteration: r.Iterations, Tokens: r.Tokens, CostCents: r.CostCents,
		CreatedAt: r.CreatedAt, Result: r.Result, Error: r.Error, Attempts: r.Attempts}
	if r.StartedAt != nil {
		out.StartedAt = *r.StartedAt
		end := now
		if r.EndedAt != nil {
			end = *r.EndedAt
		}
		out.ElapsedMs = end.Sub(*r.StartedAt).Milliseconds()
	}
	if r.EndedAt != nil {
		out.EndedAt = *r.EndedAt
	}
	return out
}

// merge overlays a live view on the stored record (which has the
// creation and end times).
func merge(live, stored client.Subagent) client.Subagent {
	live.CreatedAt, live.EndedAt, live.Attempts = stored.CreatedAt, stored.EndedAt, stored.Attempts
	if len(live.Result) == 0 {
		live.Result = stored.Result
	}
	return live
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
	runs, err := s.in.Store.ListRuns(r.Context(), store.RunFilter{ParentSession: parent, Status: statuses, Limit: limit})
	if err != nil {
		fail(w, err)
		return
	}
	keep := func(sa client.Subagent) bool {
		return (parent == "" || sa.Parent == parent) && (len(statuses) == 0 || slices.Contains(statuses, lifecycle.Status(sa.Status)))
	}
	byID := map[string]client.Subagent{}
	now := time.Now()
	for _, run := range runs {
		byID[run.ShortID] = fromRun(run, now)
	}
	for _, h := range s.in.Subagent.List(true) {
		live := fromHandle(h)
		stored, ok := byID[live.ID]
		if ok {
			live = merge(live, stored)
		}
		if keep(live) {
			byID[live.ID] = live
		} else {
			delete(byID, live.ID)
		}
	}
	out := make([]client.Subagent, 0, len(byID))
	for _, sa := range byID {
		out = append(out, sa)
	}
	slices.SortFunc(out, func(a, b client.Subagent) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	writeJSON(w, http.StatusOK, client.SubagentList{Subagents: out})
}

// getSubagent answers GET /api/subagents/{id} (an ID or unique prefix).
func (s *Server) getSubagent(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "subagent")
	if err != nil {
		fail(w, err)
		return
	}
	sa, err := s.subagent(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sa)
}

// subagent is one run's view: live when held here, else stored.
func (s *Server) subagent(ctx context.Context, id string) (client.Subagent, error) {
	if strings.TrimSpace(id) == "" {
		return client.Subagent{}, badRequestf("subagent ID: empty")
	}
	h, herr := s.in.Subagent.Get(id)
	if herr != nil && !errors.Is(herr, store.ErrNotFound) {
		return client.Subagent{}, herr
	}
	key := id
	if herr == nil {
		key = h.ID()
	}
	run, err := s.in.Store.GetRun(ctx, key)
	switch {
	case herr == nil && err == nil:
		return merge(fromHandle(h), fromRun(run, time.Now())), nil
	case herr == nil && errors.Is(err, store.ErrNotFound):
		return fromHandle(h), nil // not recorded yet: it starts
	case err != nil:
		return client.Subagent{}, err
	}
	return fromRun(run, time.Now()), nil
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
	writeJSON(w, http.StatusCreated, fromHandle(h))
}

// DefaultListLimit is how many stored runs GET /api/subagents returns,
// newest first, unless ?limit= says otherwise (a daemon that ran for
// months holds many thousands).
const DefaultListLimit = 500

// listLimit reads ?limit= (1 to 10,000; default DefaultListLimit).
func listLimit(v string) (int, error) {
	if v == "" {
		return DefaultListLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10_000 {
		return 0, badRequestf("limit %q: want a number from 1 to 10000", v)
	}
	return n, nil
}

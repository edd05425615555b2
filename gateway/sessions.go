package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/gateway/client"
)

// listSessions answers GET /api/sessions[?limit=N]: main sessions, most
// recently active first, with their state.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", ava.DefaultSessionLimit)
	if err != nil {
		fail(w, err)
		return
	}
	list, err := s.rt.Sessions(r.Context(), limit)
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]client.Session, 0, len(list))
	for _, ss := range list {
		out = append(out, toClientSession(ss))
	}
	writeJSON(w, http.StatusOK, client.SessionList{Sessions: out})
}

// getSession answers GET /api/sessions/{key}: one main session, with
// its state and spend.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	ss, err := s.rt.Session(r.Context(), r.PathValue("key"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toClientSession(ss))
}

// renameSession answers PATCH /api/sessions/{key} {title}: the person
// renames a main session (the panel's menu); the answer is the session.
func (s *Server) renameSession(w http.ResponseWriter, r *http.Request) {
	var req client.RenameRequest
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	ss, err := s.rt.RenameSession(r.Context(), r.PathValue("key"), req.Title)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toClientSession(ss))
}

// toClientSession is a session in the API's wire form.
func toClientSession(ss ava.Session) client.Session {
	return client.Session{Key: ss.Key, Title: ss.Title, State: string(ss.State), CreatedAt: ss.CreatedAt, UpdatedAt: ss.UpdatedAt,
		SpentCents: ss.SpentCents, BudgetCents: ss.BudgetCents, RunningSubagents: ss.RunningSubagents, Spend: wireSpend(ss.Spend)}
}

// wireSpend is a spend roll-up in the API's form (the same JSON).
func wireSpend(sp ava.Spend) client.Spend {
	out := client.Spend{Own: client.Usage(sp.Own), Subagents: client.Usage(sp.Subagents), Total: client.Usage(sp.Total)}
	for _, m := range sp.ByModel {
		out.ByModel = append(out.ByModel, client.ModelSpend{Model: m.Model, Tokens: m.Tokens, CostCents: m.CostCents, CachedTokens: m.CachedTokens})
	}
	return out
}

// intParam reads a non-negative integer parameter.
func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequestf("%s %q: want a number, 0 or more", name, v)
	}
	return n, nil
}

// defaultLogs is the number of entries GET /api/logs returns without
// last, a subagent or a time range (as ava logs).
const defaultLogs = 100

// logs answers GET /api/logs with the filters of ava logs: agent (ava
// or a subagent ID or prefix), last, type (repeatable or
// comma-separated), since, until, search, session, user.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	q, err := logsQuery(r, s.rt.LogReader(), time.Now())
	if err != nil {
		fail(w, err)
		return
	}
	entries, skips, err := s.rt.Logs(r.Context(), q)
	if err != nil {
		fail(w, err)
		return
	}
	out := client.LogList{Entries: make([]json.RawMessage, 0, len(entries))}
	for _, e := range entries {
		out.Entries = append(out.Entries, json.RawMessage(e.Raw))
	}
	for _, sk := range skips {
		out.Skipped = append(out.Skipped, sk.String())
	}
	writeJSON(w, http.StatusOK, out)
}

// logsQuery builds the audit query of GET /api/logs, with ava logs'
// defaults: everything of a subagent's trace or a time range, else the
// last 100 entries.
func logsQuery(r *http.Request, rd *audit.Reader, now time.Time) (audit.Query, error) {
	p := r.URL.Query()
	var q audit.Query
	var err error
	if a := p.Get("agent"); a != "" {
		q.Agent = a
		if strings.EqualFold(a, "ava") {
			q.Agent = "ava"
		} else if len(a) > 2 && strings.EqualFold(a[:2], "S-") {
			if q.Agent, err = rd.ResolveSubagentContext(r.Context(), a); err != nil {
				return q, traceError(err)
			}
		}
	}
	if q.Types, err = audit.ParseTypes(p["type"]); err != nil {
		return q, badRequestf("type: %v", err)
	}
	for name, dst := range map[string]*time.Time{"since": &q.Since, "until": &q.Until} {
		if v := p.Get(name); v != "" {
			if *dst, err = audit.ParseTime(v, now); err != nil {
				return q, badRequestf("%s: %v", name, err)
			}
		}
	}
	q.Search, q.Session, q.User = p.Get("search"), p.Get("session"), p.Get("user")
	def := defaultLogs
	if audit.IsSubagentID(q.Agent) || !q.Since.IsZero() || !q.Until.IsZero() {
		def = 0
	}
	if q.Limit, err = intParam(r, "last", def); err != nil {
		return q, err
	}
	if err := q.Validate(); err != nil {
		return q, badRequestf("%v", err)
	}
	return q, nil
}

// traceError classifies audit.Reader.ResolveSubagent's errors: a prefix
// that matches no trace is not found, a malformed or ambiguous one a bad
// request.
func traceError(err error) error {
	if errors.Is(err, audit.ErrUnknownSubagent) {
		return fmt.Errorf("agent: %s: %w", err.Error(), ava.ErrNotFound)
	}
	if errors.Is(err, audit.ErrBadSubagentID) || errors.Is(err, audit.ErrAmbiguousSubagentID) {
		return badRequestf("agent: %s", err.Error())
	}
	return fmt.Errorf("agent: %w", err)
}

// healthBody is GET /healthz's answer.
func healthBody(rt *ava.Runtime) client.Health {
	h := client.Health{Status: "ok", Version: ava.Version()}
	if name, err := rt.OrchestratorModel(""); err == nil {
		h.Model, h.Offline = name, ava.IsOffline(name)
	}
	return h
}

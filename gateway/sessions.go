package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
)

// defaultSessions bounds GET /api/sessions without a limit.
const defaultSessions = 100

// listSessions answers GET /api/sessions[?limit=N]: main sessions, most
// recently active first, with their state.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", defaultSessions)
	if err != nil {
		fail(w, err)
		return
	}
	stored, err := s.in.Store.ListSessions(r.Context(), store.SessionFilter{Main: true, Limit: limit})
	if err != nil {
		fail(w, err)
		return
	}
	out, err := s.sessionViews(r.Context(), stored)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, client.SessionList{Sessions: out})
}

// getSession answers GET /api/sessions/{key}: one main session, with
// its state and spend.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if err := session.CheckKey(key); err != nil {
		fail(w, fmt.Errorf("session key: %w", err))
		return
	}
	ss, err := s.in.Store.GetSession(r.Context(), key)
	if err != nil {
		fail(w, err)
		return
	}
	v, err := s.sessionViews(r.Context(), []store.Session{ss})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v[0])
}

// sessionViews are stored sessions as the API shows them: their live
// state, running subagents and spend rolled up (one query for all).
func (s *Server) sessionViews(ctx context.Context, stored []store.Session) ([]client.Session, error) {
	keys := make([]string, len(stored))
	for i, ss := range stored {
		keys[i] = ss.Key
	}
	spends, err := s.in.Store.SessionSpends(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]client.Session, 0, len(stored))
	for _, ss := range stored {
		out = append(out, client.Session{Key: ss.Key, State: string(s.in.Sessions.State(ss.Key)), CreatedAt: ss.CreatedAt,
			UpdatedAt: ss.UpdatedAt, SpentCents: ss.SpentCents, BudgetCents: ss.BudgetCents,
			RunningSubagents: len(s.in.Sessions.Subagents(ss.Key)), Spend: wireSpend(spends[ss.Key])})
	}
	return out, nil
}

// wireSpend is a spend roll-up in the API's form (the same JSON).
func wireSpend(sp event.Spend) client.Spend {
	out := client.Spend{Own: client.Usage(sp.Own), Subagents: client.Usage(sp.Subagents), Total: client.Usage(sp.Total)}
	for _, m := range sp.ByModel {
		out.ByModel = append(out.ByModel, client.ModelSpend{Model: m.Model, Tokens: m.Tokens, CostCents: m.CostCents})
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
	rd := s.in.LogReader(audit.ReaderOptions{Logger: s.log})
	q, err := logsQuery(r, rd, time.Now())
	if err != nil {
		fail(w, err)
		return
	}
	entries, skips, err := rd.QueryEntries(r.Context(), q)
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

// traceError classifies audit.Reader.ResolveSubagent's plain errors: a
// prefix that matches no trace is not found, a malformed or ambiguous one
// a bad request.
func traceError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "no subagent trace matches") {
		return fmt.Errorf("agent: %s: %w", msg, store.ErrNotFound)
	}
	return badRequestf("agent: %s", msg)
}

// healthBody is GET /healthz's answer.
func healthBody(in *app.Instance) client.Health {
	h := client.Health{Status: "ok"}
	if m, err := app.OrchestratorModel(in.Config, in.Catalog, ""); err == nil {
		h.Model, h.Offline = m.Name(), app.IsOffline(m)
	}
	return h
}

package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// maxHookList caps GET /api/hooks's deliveries.
const maxHookList = 1000

// hooks answers GET /api/hooks: the daemon's hooks and the deliveries
// not made yet (pending, failed, dead), or those of ?status= (a comma-
// separated list, or "all"), newest first, at most ?limit= (100).
func (s *Server) hooks(w http.ResponseWriter, r *http.Request) {
	f, err := hookFilter(r)
	if err != nil {
		fail(w, err)
		return
	}
	ds, err := s.rt.HookDeliveries(r.Context(), f)
	if err != nil {
		fail(w, err)
		return
	}
	out := client.HookList{Hooks: []client.Hook{}, Deliveries: toClientDeliveries(ds)}
	for _, h := range s.rt.Hooks() {
		out.Hooks = append(out.Hooks, client.Hook{ID: h.ID(), Kind: h.Kind(), Target: h.Target(), Events: h.Events, From: h.From})
	}
	writeJSON(w, http.StatusOK, out)
}

// hookFilter reads GET /api/hooks's query.
func hookFilter(r *http.Request) (ava.HookFilter, error) {
	f := ava.HookFilter{Status: []string{ava.HookPending, ava.HookFailed, ava.HookDead}, Limit: 100}
	if st := r.URL.Query().Get("status"); st == "all" {
		f.Status = nil
	} else if st != "" {
		f.Status = strings.Split(st, ",")
		for _, s := range f.Status {
			if !slices.Contains(ava.HookStatuses, s) {
				return f, badRequestf("status %q: use pending, failed, dead, delivered (comma-separated) or all", s)
			}
		}
	}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxHookList {
			return f, badRequestf("limit %q: want 1 to %d", l, maxHookList)
		}
		f.Limit = n
	}
	return f, nil
}

// retryHooks answers POST /api/hooks/retry: it sends failed and dead
// deliveries again (those of ids, each an ID or a unique prefix of one;
// else all), makes one attempt at each in the daemon, and answers them
// as they are then.
func (s *Server) retryHooks(w http.ResponseWriter, r *http.Request) {
	var req client.HookRetryRequest
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	ds, err := s.rt.RetryHookDeliveries(r.Context(), req.IDs)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, client.HookList{Hooks: []client.Hook{}, Deliveries: toClientDeliveries(ds)})
}

func toClientDeliveries(ds []ava.HookDelivery) []client.HookDelivery {
	out := make([]client.HookDelivery, 0, len(ds))
	for _, d := range ds {
		body := json.RawMessage(d.Body)
		if !json.Valid(body) {
			body, _ = json.Marshal(d.Body)
		}
		out = append(out, client.HookDelivery{ID: d.ID, HookID: d.HookID, Kind: d.Kind, Target: d.Target, Event: d.Event,
			SessionKey: d.SessionKey, Seq: d.Seq, RunID: d.Run, Status: d.Status, Attempts: d.Attempts, MaxAttempts: d.MaxAttempts,
			NextAt: d.NextAt, LastError: d.LastError, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt, Body: body})
	}
	return out
}

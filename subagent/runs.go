package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// DefaultListLimit is how many stored runs Runs reads, newest first,
// unless RunFilter.Limit says otherwise (a daemon that ran for months
// holds many thousands).
const DefaultListLimit = 500

// MaxListLimit is the largest RunFilter.Limit.
const MaxListLimit = 10_000

// RunFilter selects the runs Runs lists.
type RunFilter struct {
	// Session keeps the runs spawned from that session ("" for every
	// session).
	Session string
	// Status keeps the runs in one of these statuses (none: every one;
	// lifecycle.Active for the queued and running ones).
	Status []lifecycle.Status
	// Limit is how many stored runs are read, newest first (0:
	// DefaultListLimit; at most MaxListLimit).
	Limit int
}

// keeps reports whether f selects st.
func (f RunFilter) keeps(st RunStatus) bool {
	return (f.Session == "" || st.Parent == f.Session) && (len(f.Status) == 0 || slices.Contains(f.Status, st.Status))
}

// Runs is the one list of runs every surface shows, newest first: the
// runs f selects as the store records them (those of every process of
// a cluster included), each with the live status of its handle when this
// process holds it (queued, with its queue position, running, or
// finished and still held), so a run's figures are the same whether it
// is read live or stored (figures.go). Everything is masked.
func (m *Manager) Runs(ctx context.Context, f RunFilter) ([]RunStatus, error) {
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	if f.Limit < 0 || f.Limit > MaxListLimit {
		return nil, fmt.Errorf("list subagents: limit %d: want 1 to %d", f.Limit, MaxListLimit)
	}
	runs, err := m.opt.Store.ListRuns(ctx, store.RunFilter{ParentSession: f.Session, Status: f.Status, Limit: f.Limit})
	if err != nil {
		return nil, fmt.Errorf("list subagents: %w", err)
	}
	now := m.now()
	byID := make(map[string]RunStatus, len(runs))
	for _, r := range runs {
		byID[r.ShortID] = statusOfRun(r, now)
	}
	for _, h := range m.List(true) {
		st := h.overStored(byID[h.ID()])
		if f.keeps(st) {
			byID[st.ID] = st
		} else {
			delete(byID, st.ID)
		}
	}
	out := make([]RunStatus, 0, len(byID))
	for _, st := range byID {
		out = append(out, st.Masked(m.opt.Redactor))
	}
	slices.SortFunc(out, func(a, b RunStatus) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Run is one run's status (an ID or a unique prefix): its handle's when
// this process holds it, else its record's, in the same figures as Runs.
func (m *Manager) Run(ctx context.Context, id string) (RunStatus, error) {
	if strings.TrimSpace(id) == "" {
		return RunStatus{}, fmt.Errorf("subagent ID: %w", store.ErrEmpty)
	}
	h, herr := m.Get(id)
	if herr != nil && !errors.Is(herr, store.ErrNotFound) {
		return RunStatus{}, herr
	}
	key := id
	if herr == nil {
		key = h.ID()
	}
	r, err := m.opt.Store.GetRun(ctx, key)
	switch {
	case herr == nil && err == nil:
		return h.overStored(statusOfRun(r, m.now())).Masked(m.opt.Redactor), nil
	case herr == nil && errors.Is(err, store.ErrNotFound):
		return h.overStored(RunStatus{}).Masked(m.opt.Redactor), nil // not recorded yet: it starts
	case err != nil:
		return RunStatus{}, fmt.Errorf("subagent %s: %w", id, err)
	}
	return statusOfRun(r, m.now()).Masked(m.opt.Redactor), nil
}

// overStored is the handle's live status over its stored one (which has
// what the handle does not: its resume attempts, a result it has not
// loaded).
func (h *Handle) overStored(stored RunStatus) RunStatus {
	st := h.liveStatus()
	st.Live, st.CreatedAt, st.Attempts = true, h.created, max(stored.Attempts, h.attemptCount())
	st.Result, st.Error = stored.Result, stored.Error
	if r, ok := h.Result(); ok {
		st.Result, _ = json.Marshal(r)
		st.Error = r.Error
	}
	return st
}

// attemptCount is how often the run was resumed.
func (h *Handle) attemptCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.attempt
}

// statusOfRun is the status of a run as the store records it, as of now.
func statusOfRun(r store.Run, now time.Time) RunStatus {
	st := RunStatus{ID: r.ShortID, Role: r.Role, Task: r.Task, Model: r.Model, Mode: Mode(r.Mode), Parent: r.ParentSession,
		GroupID: r.GroupID, Status: r.Status, CreatedAt: r.CreatedAt, Attempts: r.Attempts, Error: r.Error, Result: r.Result}
	storedFigures(r).set(&st, now)
	if r.Status == lifecycle.Queued {
		st.QueuedAt = r.CreatedAt
	}
	st.Waits = storedWaits(r.Result)
	return st
}

// storedWaits are the waits for the person a stored result keeps (none
// when it has none, or cannot be read).
func storedWaits(result json.RawMessage) []Wait {
	if len(result) == 0 {
		return nil
	}
	var r struct {
		Waits []Wait `json:"waits"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	return r.Waits
}

// queuedIDs are the IDs of the handles that wait for a slot.
func queuedIDs(hs []*Handle) []string {
	var ids []string
	for _, h := range hs {
		if h.isQueued() {
			ids = append(ids, h.ID())
		}
	}
	return slices.Clip(ids)
}

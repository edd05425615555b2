package subagent

import (
	"context"
	"fmt"
	"slices"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// listLimit caps the finished runs Runs reads from the store.
const listLimit = 50

// Runs returns the status of the runs spawned from session ("" for every
// session), newest first: the active ones of this process (queued, with
// their queue position, or running) and, with all, the most recent
// finished ones (up to 50), read from the store, so finished runs are
// listed whether or not their handles are still in memory.
func (m *Manager) Runs(ctx context.Context, session string, all bool) ([]RunStatus, error) {
	var out []RunStatus
	seen := map[string]bool{}
	for _, h := range m.List(false) {
		if session == "" || h.Parent() == session {
			out = append(out, h.Status())
			seen[h.ID()] = true
		}
	}
	if !all && m.opt.Dispatch == nil {
		return out, nil
	}
	// In a cluster the active runs of every process are listed too.
	f := store.RunFilter{ParentSession: session, Limit: listLimit, Active: !all}
	runs, err := m.opt.Store.ListRuns(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list subagents: %w", err)
	}
	for _, r := range runs {
		if !seen[r.ShortID] {
			out = append(out, statusOfRun(r))
		}
	}
	return out, nil
}

// statusOfRun is the status of a run as the store records it.
func statusOfRun(r store.Run) RunStatus {
	st := RunStatus{ID: r.ShortID, Role: r.Role, Task: r.Task, Model: r.Model, Mode: Mode(r.Mode), Parent: r.ParentSession,
		Status: r.Status, Iteration: r.Iterations, Tokens: r.Tokens, CostCents: r.CostCents}
	if r.StartedAt != nil {
		st.StartedAt = *r.StartedAt
		if r.EndedAt != nil {
			st.Elapsed = r.EndedAt.Sub(*r.StartedAt)
		}
	}
	if r.Status == lifecycle.Queued {
		st.QueuedAt = r.CreatedAt
	}
	return st
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

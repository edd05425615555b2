package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// interruptedSummary is the summary of a run whose process died.
const interruptedSummary = "interrupted: the process running it stopped before it finished"

// ownerID is the owner recorded on this manager's runs.
func (m *Manager) ownerID() string {
	if m.opt.Owner == nil {
		return ""
	}
	return m.opt.Owner.ID()
}

// Recover ends as interrupted every active run whose owner is gone (never
// this process's own), records each end as a finished run's would be (a
// subagent:aborted lifecycle entry, Error and SessionEnd in its own
// trace, SubagentComplete in its parent's session), and then announces
// every finished result its parent has not had. Runs owned by a live
// process, in this one or another, are left alone.
func (m *Manager) Recover(ctx context.Context) error {
	if m.opt.Owner != nil && (m.opt.Dispatch == nil || m.opt.Worker) {
		if err := m.recoverGone(ctx); err != nil {
			return err
		}
	}
	runs, err := m.opt.Store.Unannounced(ctx)
	if err != nil {
		return fmt.Errorf("find unannounced results: %w", err)
	}
	if err := m.ensureEnds(ctx, runs); err != nil {
		return err
	}
	for _, r := range runs {
		if err := m.announceStored(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// otherOwners are the owners recovery looks at: those of active runs,
// and every other registered instance, so that a gone process that owns
// no run (a gateway of a cluster, which dispatches its runs to workers;
// a process killed while idle) has its registration removed too, not
// left behind for good.
func (m *Manager) otherOwners(ctx context.Context, active []store.Run) ([]string, error) {
	registered, err := m.opt.Store.Instances(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover runs: %w", err)
	}
	ids := make([]string, 0, len(active)+len(registered))
	for _, r := range active {
		ids = append(ids, r.Owner)
	}
	for _, in := range registered {
		ids = append(ids, in.ID)
	}
	return m.others(ids), nil
}

// others is ids without duplicates, this process and the cluster's
// queue: the owners another process may be recovering from.
func (m *Manager) others(ids []string) []string {
	var owners []string
	for _, id := range ids {
		if id != m.ownerID() && id != store.OwnerQueue && !slices.Contains(owners, id) {
			owners = append(owners, id)
		}
	}
	return owners
}

// recoverGone ends or takes over the runs of gone owners and removes
// their registrations.
func (m *Manager) recoverGone(ctx context.Context) error {
	active, err := m.opt.Store.ListRuns(ctx, store.RunFilter{Active: true})
	if err != nil {
		return fmt.Errorf("recover runs: %w", err)
	}
	owners, err := m.otherOwners(ctx, active)
	if err != nil {
		return err
	}
	if len(owners) == 0 {
		return nil
	}
	gone, err := m.opt.Owner.Gone(ctx, owners)
	if err != nil {
		return fmt.Errorf("recover runs: %w", err)
	}
	tk := store.Takeover{Owner: m.ownerID(), MaxAttempts: m.resumeAttempts()}
	if tk.MaxAttempts > 0 && tk.Owner != "" {
		tk.Resume = m.resumable
	}
	for _, seen := range gone {
		owner := seen.ID
		tk.Seen = &seen
		resumed, runs, err := m.opt.Store.RecoverOwner(ctx, owner, m.now(), tk)
		if err != nil {
			return fmt.Errorf("recover runs: %w", err)
		}
		if len(runs) > 0 {
			m.log.Warn("subagents interrupted: the process running them is gone", "count", len(runs), "owner", owner)
		}
		m.ensureStarts(ctx, append(slices.Clone(resumed), runs...))
		for _, r := range runs {
			if r.Error == store.QuarantinedError {
				m.log.Warn("subagent quarantined: its process stopped after every resume allowed", "id", r.ShortID, "attempts", r.Attempts)
			}
			m.recordInterrupted(r)
		}
		for _, r := range resumed {
			m.resume(ctx, r)
		}
	}
	return nil
}

// recoverLoop looks for gone owners' runs until the manager closes, so a
// long-running process also recovers the runs of one that died after it
// started.
func (m *Manager) recoverLoop() {
	m.every(m.opt.RecoverEvery, func() {
		m.stopLost()
		if err := m.Recover(m.ctx); err != nil && m.ctx.Err() == nil {
			m.log.Error("recover runs of gone processes", "err", err)
		}
	})
}

// recordInterrupted writes the end of a run another process left behind:
// its trace ends with how it ended, its parent's record shows it.
func (m *Manager) recordInterrupted(r store.Run) {
	end := m.now()
	if r.EndedAt != nil {
		end = *r.EndedAt
	}
	start := r.CreatedAt
	if r.StartedAt != nil {
		start = *r.StartedAt
	}
	for _, ev := range endEvents(lifecycle.Interrupted, r.Error, r.Model, event.Meta{}) {
		ev.Session, ev.Agent, ev.Time = r.SessionKey, r.ShortID, end
		ev.Meta.ParentAgentID = r.ParentAgent
		if _, err := m.opt.Hub.Publish(ev); err != nil {
			m.log.Error("record interrupted run", "id", r.ShortID, "err", err)
		}
	}
	m.noticeInterrupted(r, end)
	// Its figures are its record's (figures.go): the active time of its
	// ended turns; the one its process died in is not known.
	res := Result{SubagentID: r.ShortID, Status: lifecycle.Interrupted, TokensUsed: r.Tokens, CostCents: r.CostCents,
		DurationSeconds: r.Active.Seconds(), Iterations: r.Iterations, Summary: interruptedRunSummary(r.Error)}
	if r.ParentSession == "" {
		return
	}
	ev := completeEvent(r.Role, r.Mode, r.Model, res, agent.Result{CostCents: r.CostCents, Duration: end.Sub(start)}, start, r.Attempts)
	ev.Session, ev.Agent, ev.Time = r.ParentSession, r.ParentAgent, end
	if ev.Agent == "" {
		ev.Agent = event.OrchestratorID
	}
	if _, err := m.opt.Hub.Publish(ev); err != nil {
		m.log.Error("record interrupted run in its parent", "id", r.ShortID, "err", err)
	}
}

// goneOwners returns which owners of runs are gone (never this process
// nor the cluster's queue), as Owner.Gone saw them.
func (m *Manager) goneOwners(ctx context.Context, runs []store.Run) ([]store.Instance, error) {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.Owner
	}
	owners := m.others(ids)
	if len(owners) == 0 {
		return nil, nil
	}
	return m.opt.Owner.Gone(ctx, owners)
}

// ensureEnds writes the end entries of finished, unannounced runs whose
// process died after it recorded their end and before it published it
// (so before their entry was written and their result announced). Only
// runs whose owner is gone: a live process, this one included, is about
// to publish the end itself. A run recorded under a lease this process
// held is never one of them, even once that lease is lost (this process
// paused past it registers again under a new ID, and its old ID is then
// gone): its end was recorded by this process's own write, which
// publishes it, or by the process that took the run from it, which
// publishes it; this one publishes nothing its own write did not record.
func (m *Manager) ensureEnds(ctx context.Context, runs []store.Run) error {
	if m.opt.LifecycleFiles == nil || m.opt.Owner == nil || len(runs) == 0 {
		return nil
	}
	runs = slices.DeleteFunc(slices.Clone(runs), func(r store.Run) bool { return m.ownLease(r.Owner) })
	gone, err := m.goneOwners(ctx, runs)
	if err != nil {
		return fmt.Errorf("find ends not written: %w", err)
	}
	var evs []event.Event
	for _, r := range runs {
		if r.ParentSession == "" || r.EndedAt == nil || !slices.ContainsFunc(gone, func(g store.Instance) bool { return g.ID == r.Owner }) {
			continue
		}
		evs = append(evs, storedCompleteEvent(r))
	}
	if len(evs) > 0 {
		if err := m.opt.LifecycleFiles.EnsureEntries(evs); err != nil {
			m.log.Error("write missing end entries of finished runs", "err", err)
		}
	}
	return nil
}

// storedCompleteEvent is the parent's SubagentComplete of a finished run,
// rebuilt from its record.
func storedCompleteEvent(r store.Run) event.Event {
	var res Result
	if len(r.Result) > 0 {
		_ = json.Unmarshal(r.Result, &res)
	}
	res.SubagentID, res.Status, res.TokensUsed, res.CostCents, res.Iterations = r.ShortID, r.Status, r.Tokens, r.CostCents, r.Iterations
	start := r.CreatedAt
	if r.StartedAt != nil {
		start = *r.StartedAt
	}
	ev := completeEvent(r.Role, r.Mode, r.Model, res, agent.Result{CostCents: r.CostCents, Duration: r.EndedAt.Sub(start)}, start, r.Attempts)
	ev.Session, ev.Agent, ev.Time = r.ParentSession, r.ParentAgent, *r.EndedAt
	return ev
}

// ensureStarts writes the subagent:start entries of recovered runs that
// started but whose entry their dead process had not written yet (it
// publishes SubagentSpawn without waiting), so that their next entries
// never come without a start. In a cluster each process writes session
// files of its own: a run whose SubagentSpawn is in its parent's event
// log had its start entry written by the process that published it, on
// its machine, so this one writes none (the taken-over run gets only its
// subagent:resumed here).
func (m *Manager) ensureStarts(ctx context.Context, runs []store.Run) {
	if m.opt.LifecycleFiles == nil {
		return
	}
	if m.opt.Dispatch != nil {
		runs = m.unpublishedStarts(ctx, runs)
	}
	var evs []event.Event
	for _, r := range runs {
		if r.StartedAt == nil || r.ParentSession == "" {
			continue
		}
		ev := event.New(event.SubagentSpawn, event.SubagentSpawnContent{SubagentID: r.ShortID, Role: r.Role, Task: r.Task,
			Model: r.Model, Mode: r.Mode})
		ev.Session, ev.Agent, ev.Time = r.ParentSession, r.ParentAgent, *r.StartedAt
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		return
	}
	if err := m.opt.LifecycleFiles.EnsureEntries(evs); err != nil {
		m.log.Error("write missing start entries of recovered runs", "err", err)
	}
}

// unpublishedStarts are the runs of runs whose SubagentSpawn is not in
// their parent session's event log. A log that cannot be read leaves
// the runs in (a start entry too many rather than none).
func (m *Manager) unpublishedStarts(ctx context.Context, runs []store.Run) []store.Run {
	bySession := map[string]map[string]bool{}
	for _, r := range runs {
		if r.ParentSession != "" && bySession[r.ParentSession] == nil {
			bySession[r.ParentSession] = map[string]bool{}
		}
	}
	for session, published := range bySession {
		if err := m.readStarts(ctx, session, published); err != nil {
			m.log.Warn("read the starts published in a parent session", "session", session, "err", err)
		}
	}
	var out []store.Run
	for _, r := range runs {
		if !bySession[r.ParentSession][r.ShortID] {
			out = append(out, r)
		}
	}
	return out
}

// startsPage is how many events unpublishedStarts reads at a time.
const startsPage = 1000

// readStarts marks in published the subagents whose SubagentSpawn is in
// session's event log.
func (m *Manager) readStarts(ctx context.Context, session string, published map[string]bool) error {
	for after := uint64(0); ; {
		evs, err := m.opt.Store.ReadEvents(ctx, session, after, startsPage)
		if err != nil {
			return fmt.Errorf("read events of %s: %w", session, err)
		}
		for _, ev := range evs {
			after = ev.Seq
			var c event.SubagentSpawnContent
			if ev.Type == event.SubagentSpawn && ev.Decode(&c) == nil {
				published[c.SubagentID] = true
			}
		}
		if len(evs) < startsPage {
			return nil
		}
	}
}

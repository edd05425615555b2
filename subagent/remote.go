package subagent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// remoteRuns are the views of the runs this process dispatched that run
// elsewhere, by run UUID (dispatch.go): each is completed by RemoteEnded
// and cancelled through the run's worker. The lock is their own, never
// held with the Manager's or a handle's.
type remoteRuns struct {
	mu     sync.Mutex
	byUUID map[string]*Handle
}

// watch adds the view h.
func (r *remoteRuns) watch(h *Handle) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byUUID == nil {
		r.byUUID = map[string]*Handle{}
	}
	r.byUUID[h.uuid] = h
}

// adopt adds h as the view of its run unless the run has one already,
// and returns the view; added reports whether it is h.
func (r *remoteRuns) adopt(h *Handle) (view *Handle, added bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if other := r.byUUID[h.uuid]; other != nil {
		return other, false
	}
	if r.byUUID == nil {
		r.byUUID = map[string]*Handle{}
	}
	r.byUUID[h.uuid] = h
	return h, true
}

// get returns the view of run id, or nil.
func (r *remoteRuns) get(id string) *Handle {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byUUID[id]
}

// take removes the view of run id and reports whether there was one:
// of two callers, one takes it.
func (r *remoteRuns) take(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.byUUID[id]
	delete(r.byUUID, id)
	return ok
}

// drain removes and returns every view.
func (r *remoteRuns) drain() []*Handle {
	r.mu.Lock()
	defer r.mu.Unlock()
	views := make([]*Handle, 0, len(r.byUUID))
	for id, h := range r.byUUID {
		views = append(views, h)
		delete(r.byUUID, id)
	}
	return views
}

// len is how many views there are.
func (r *remoteRuns) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byUUID)
}

// endedAmong lists the runs with a view that are not going (the
// cluster's active runs).
func (r *remoteRuns) endedAmong(going map[string]bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ended []string
	for id := range r.byUUID {
		if !going[id] {
			ended = append(ended, id)
		}
	}
	return ended
}

// watchRemote registers h, before its run is committed, as the view of
// a run elsewhere: RemoteEnded completes it (its end can come as soon
// as the commit), and it is the active handle of its ID here unless this
// process already runs the run itself (role all).
func (m *Manager) watchRemote(h *Handle) {
	m.remote.watch(h)
	m.mu.Lock()
	if _, ok := m.handles[h.id]; !ok {
		m.handles[h.id] = h
	}
	m.mu.Unlock()
}

// unwatchRemote undoes watchRemote for a run that was not committed.
func (m *Manager) unwatchRemote(h *Handle) {
	m.remote.take(h.uuid)
	m.mu.Lock()
	if m.handles[h.id] == h {
		delete(m.handles, h.id)
	}
	m.mu.Unlock()
}

// dropRemote ends this process's views of runs elsewhere at its
// shutdown, so that nothing here waits for them: the runs go on on
// their workers, and their results reach their parents there.
func (m *Manager) dropRemote() {
	for _, h := range m.remote.drain() {
		h.end()
	}
}

// remoteCancel stops a run that runs elsewhere: the worker running it
// hears the request; a run no worker claimed yet is claimed here and
// ends cancelled without calling the model, through the same path as
// any queued run's end. The request is sent again until the run has
// ended, since a worker that was claiming the run as the first one came
// had no handle to stop yet.
func (m *Manager) remoteCancel(h *Handle) {
	deadline := time.Now().Add(cancelGiveUp)
	done := h.Done() // this turn's: a follow-up after it is not cancelled
	for {
		ctx, cancel := context.WithTimeout(context.Background(), finalWriteTimeout)
		if err := m.opt.Dispatch.Control(ctx, Control{Op: ControlCancel, Run: h.id}); err != nil {
			m.log.Error("cancel subagent on its worker", "id", h.id, "err", err)
		}
		if err := m.execute(ctx, h.uuid, 0, true); err != nil && !errors.Is(err, ErrClosed) {
			m.log.Error("cancel queued subagent", "id", h.id, "err", err)
		}
		cancel()
		select {
		case <-done:
			return
		case <-m.ctx.Done():
			return
		case <-time.After(cancelRetry):
		}
		if time.Now().After(deadline) {
			m.log.Warn("subagent on another process did not stop after its cancel", "id", h.id)
			return
		}
	}
}

// RemoteEnded completes the remote view of a run this process
// dispatched, once the run has ended on its worker (called for every
// ended run's ID; others are ignored). It reads the run's end from the
// store.
func (m *Manager) RemoteEnded(ctx context.Context, runID string) {
	h := m.remote.get(runID)
	if h == nil {
		return
	}
	r, err := m.opt.Store.GetRun(ctx, runID)
	if err != nil {
		m.log.Error("read the end of a subagent run elsewhere", "id", h.id, "err", err)
		return
	}
	if !r.Status.Final() {
		return
	}
	if !m.remote.take(runID) {
		return
	}
	restored, err := m.restoreResult(r)
	if err != nil {
		m.log.Error("read the end of a subagent run elsewhere", "id", h.id, "err", err)
	}
	h.mu.Lock()
	h.status, h.stored, h.result = r.Status, r.Status, restored
	h.adopt(r)
	h.mu.Unlock()
	h.end()
}

// SyncRemote completes the remote views whose runs ended while this
// process was not listening (a lost connection to the database, a
// failed read): one query for the cluster's active runs, then a read of
// each view's run that is no longer among them.
func (m *Manager) SyncRemote(ctx context.Context) {
	if m.remote.len() == 0 {
		return
	}
	active, err := m.opt.Store.ListRuns(ctx, store.RunFilter{Active: true})
	if err != nil {
		m.log.Error("look for the ends of subagent runs elsewhere", "err", err)
		return
	}
	going := make(map[string]bool, len(active))
	for _, r := range active {
		going[r.ID] = true
	}
	for _, id := range m.remote.endedAmong(going) {
		m.RemoteEnded(ctx, id)
	}
}

// remoteStatus is the stored state of a run that runs elsewhere.
func (m *Manager) remoteStatus(h *Handle, st RunStatus) RunStatus {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	r, err := m.opt.Store.GetRun(ctx, h.uuid)
	if err != nil {
		return st
	}
	live := statusOfRun(r, m.now())
	if r.Status == lifecycle.Queued {
		live.QueuedAt = st.QueuedAt
	}
	return live
}

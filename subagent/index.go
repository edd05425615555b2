package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"weak"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/transcript"
)

// The manager holds the handles of active runs (queued or holding a
// slot) strongly, in m.handles. A run that ends is retired: its handle
// moves to m.idle, a weak index, so a caller that still holds the handle
// (to Wait, Subscribe or Send to it) gets the same one from Get, and once
// no one does, the garbage collector frees it and its entry goes too
// (runtime.AddCleanup). Any lookup that misses rebuilds the handle from
// the store (restore). So a process that runs for weeks keeps only its
// active runs in memory; event journals are dropped the same way at a
// run's end (Hub.Forget).

// idleRef names the weak index entry of a retired handle, for its
// cleanup.
type idleRef struct {
	id string
	wp weak.Pointer[Handle]
}

// retire moves h from the active index to the weak one (caller holds
// m.mu).
func (m *Manager) retire(h *Handle) {
	if m.handles[h.id] == h {
		delete(m.handles, h.id)
	}
	wp := weak.Make(h)
	m.idle[h.id] = wp
	if !h.watched {
		h.watched = true
		runtime.AddCleanup(h, m.dropIdle, idleRef{id: h.id, wp: wp})
	}
}

// dropIdle removes the weak index entry of a collected handle, unless a
// restored handle has taken its place.
func (m *Manager) dropIdle(r idleRef) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.idle[r.id] == r.wp {
		delete(m.idle, r.id)
	}
}

// heldHandles counts the active handles and the weak index's entries.
func (m *Manager) heldHandles() (active, idle int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.handles), len(m.idle)
}

// inMemory returns the handles in memory whose short ID or UUID starts
// with id; an exact short ID alone when one matches.
func (m *Manager) inMemory(id string) []*Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.handles[id]; ok {
		return []*Handle{h}
	}
	if h := m.idle[id].Value(); h != nil {
		return []*Handle{h}
	}
	var found []*Handle
	match := func(h *Handle) {
		if h != nil && (strings.HasPrefix(h.id, id) || strings.HasPrefix(h.uuid, id)) {
			found = append(found, h)
		}
	}
	for _, h := range m.handles {
		match(h)
	}
	for k, wp := range m.idle {
		if _, active := m.handles[k]; !active {
			match(wp.Value())
		}
	}
	return found
}

// lookup finds a run by short ID, UUID or a unique prefix of either: its
// handle in memory, else one rebuilt from the store (a finished run of
// this process or of an earlier one). An active run of another process
// gives an error wrapping ErrBusy; a prefix of several runs, in memory or
// in the store, a *store.AmbiguousError.
func (m *Manager) lookup(ctx context.Context, id string) (*Handle, error) {
	mem := m.inMemory(id)
	if len(mem) == 1 && (mem[0].id == id || mem[0].uuid == id) {
		return mem[0], nil
	}
	run, err := m.opt.Store.GetRun(ctx, id)
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return nil, ambiguous(id, mem, amb.Candidates)
	case errors.Is(err, store.ErrNotFound):
		if len(mem) == 1 {
			return mem[0], nil // not recorded yet: its record is written as it starts
		}
		if len(mem) == 0 {
			return nil, fmt.Errorf("subagent %s: %w", id, store.ErrNotFound)
		}
		return nil, ambiguous(id, mem, nil)
	case err != nil:
		return nil, fmt.Errorf("look up subagent %s: %w", id, err)
	}
	for _, h := range mem {
		if h.id != run.ShortID {
			return nil, ambiguous(id, mem, []string{run.ShortID})
		}
	}
	if len(mem) == 1 {
		return mem[0], nil
	}
	return m.restore(ctx, run)
}

// ambiguous is the error of a prefix that matches several runs.
func ambiguous(prefix string, mem []*Handle, stored []string) error {
	ids := slices.Clone(stored)
	for _, h := range mem {
		ids = append(ids, h.id)
	}
	slices.Sort(ids)
	return &store.AmbiguousError{Prefix: prefix, Candidates: slices.Compact(ids)}
}

// restore rebuilds the handle of a finished run recorded in the store:
// its configuration, role, model and limits, and its last result; its
// conversation is loaded when a follow-up needs it (Handle.history), and
// its event stream is numbered on from where it stopped. The handle joins
// the weak index, so it lives as long as someone holds it. It is the one
// way a run that is not in memory comes back: for Get, Send, the status
// tools and Cancel alike.
func (m *Manager) restore(ctx context.Context, run store.Run) (*Handle, error) {
	if !run.Status.Final() && m.opt.Dispatch == nil {
		return nil, fmt.Errorf("subagent %s is %s in another process: %w", run.ShortID, run.Status, ErrBusy)
	}
	var cfg Config
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return nil, fmt.Errorf("restore %s: stored config: %w", run.ShortID, err)
	}
	// The model it ran on, not the alias it was asked for; named by the
	// operator, as the store holds only what a spawn admitted.
	cfg.Model, cfg.ModelBy = run.Model, llm.NamedByOperator
	req := Request{Config: cfg, Parent: tool.Caller{AgentID: run.ParentAgent, SessionKey: run.ParentSession}, mode: Mode(run.Mode), groupID: run.GroupID,
		admitted: m.opt.Dispatch != nil, restored: true}
	h, err := m.prepare(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", run.ShortID, err)
	}
	h.id, h.uuid, h.created, h.turns, h.restored = run.ShortID, run.ID, run.CreatedAt, 1, true
	h.status, h.stored = run.Status, run.Status
	h.adopt(run)
	h.result, _ = m.restoreResult(run)
	if !run.Status.Final() {
		return m.remoteView(h)
	}
	close(h.done)
	m.mu.Lock()
	defer m.mu.Unlock()
	if other, ok := m.handles[h.id]; ok {
		return other, nil // resumed meanwhile by another caller
	}
	if other := m.idle[h.id].Value(); other != nil {
		return other, nil // restored meanwhile by another caller
	}
	m.retire(h)
	return h, nil
}

// restoreResult is a finished run's stored result (nil when it has
// none).
func (m *Manager) restoreResult(run store.Run) (*Result, error) {
	if len(run.Result) == 0 {
		return nil, nil
	}
	var r Result
	if err := json.Unmarshal(run.Result, &r); err != nil {
		return nil, fmt.Errorf("stored result of %s: %w", run.ShortID, err)
	}
	return &r, nil
}

// remoteView makes h, rebuilt from an active run's record, the view of
// a run another process of the cluster runs: completed by RemoteEnded,
// cancelled through the worker.
func (m *Manager) remoteView(h *Handle) (*Handle, error) {
	m.mu.Lock()
	if other, ok := m.handles[h.id]; ok {
		m.mu.Unlock()
		return other, nil
	}
	m.mu.Unlock()
	h.remote = true
	view, added := m.remote.adopt(h)
	if !added {
		return view, nil
	}
	// An end between the read and now sent its notice before the view
	// listened for it.
	m.wg.Go(func() { m.RemoteEnded(m.ctx, h.uuid) })
	return h, nil
}

// history is the conversation a follow-up continues: the handle's own,
// or for a restored handle the one stored with its run's turns.
func (h *Handle) history(ctx context.Context) ([]llm.Message, error) {
	h.mu.Lock()
	msgs, load := h.messages, h.restored
	h.mu.Unlock()
	if !load {
		return msgs, nil
	}
	stored, err := h.m.opt.Store.Messages(ctx, h.SessionKey(), 0)
	if err != nil {
		return nil, fmt.Errorf("load conversation of %s: %w", h.id, err)
	}
	if msgs, err = transcript.FromStore(stored); err != nil {
		return nil, fmt.Errorf("load conversation of %s: %w", h.id, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.restored {
		h.messages, h.restored = msgs, false
	}
	return h.messages, nil
}

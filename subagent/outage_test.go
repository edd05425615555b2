package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// fullStore is a store whose every write fails as a full disk's does
// while full is set (store.ErrDiskFull), and works again once it is
// cleared: the fault of a data root that fills up mid-run.
type fullStore struct {
	store.Store
	full  atomic.Bool
	fails atomic.Int32
}

func (f *fullStore) refuse() error {
	if f.full.Load() {
		f.fails.Add(1)
		return fmt.Errorf("store ava.db: the disk is full; free some space: %w", store.ErrDiskFull)
	}
	return nil
}

func (f *fullStore) CreateRun(ctx context.Context, r store.Run) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.CreateRun(ctx, r)
}

func (f *fullStore) TransitionRun(ctx context.Context, id, owner string, from []lifecycle.Status, to lifecycle.Status, fin *store.RunFinish) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.TransitionRun(ctx, id, owner, from, to, fin)
}

func (f *fullStore) CheckpointRun(ctx context.Context, id string, c store.Checkpoint) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.CheckpointRun(ctx, id, c)
}

func (f *fullStore) AppendEvents(ctx context.Context, evs []event.Event) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.AppendEvents(ctx, evs)
}

func (f *fullStore) AnnounceResult(ctx context.Context, id, owner string, m store.Message) (bool, error) {
	if err := f.refuse(); err != nil {
		return false, err
	}
	return f.Store.AnnounceResult(ctx, id, owner, m)
}

func (f *fullStore) MarkAnnounced(ctx context.Context, id string) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.MarkAnnounced(ctx, id)
}

func (f *fullStore) Heartbeat(ctx context.Context, id string, at time.Time) error {
	if err := f.refuse(); err != nil {
		return err
	}
	return f.Store.Heartbeat(ctx, id, at)
}

// The data root fills up while subagents run, then space returns: no
// run is left active in the store, each ends once (one end entry, one
// result for its parent), and a spawn made while the disk is full gets
// an error naming the cause and no ID, never a run that does not exist.
func TestFullDiskMidRunEndsEveryRunOnceSpaceReturns(t *testing.T) {
	gate := &gateTool{named: "read_file", entered: make(chan struct{}, 16), release: make(chan struct{})}
	h := newHarness(t, "turns:\n  - tool_calls: [{name: read_file, args: {path: a}}]\n  - text: done\n", nil, gate)
	ctx := context.Background()
	fs := &fullStore{Store: h.store}
	hub := event.NewHub(fs, sessionFiles(t, h.root))
	owner, err := instance.Start(ctx, instance.Options{Store: fs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	opts := h.opts
	opts.Store, opts.Hub, opts.Owner, opts.MaxConcurrent, opts.RecoverEvery = fs, hub, owner, 8, 100*time.Millisecond
	m := subagent.NewManager(opts)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 6
	ids := spawnAtTheGate(t, m, gate, "fill", n)
	fs.full.Store(true)
	if _, err := m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "while full"}, Parent: parent, Background: true}); !errors.Is(err, subagent.ErrNotRecorded) || !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("spawn on a full disk: %v; want ErrNotRecorded and ErrDiskFull", err)
	}
	close(gate.release) // the runs go on and end while nothing can be written
	deadline := time.Now().Add(20 * time.Second)
	for fs.fails.Load() < 2*n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	fs.full.Store(false)

	for _, id := range ids {
		r := waitRun(t, h, id)
		if r.Status != lifecycle.Success {
			t.Fatalf("run %s: %s (%s)", id, r.Status, r.Error)
		}
		if n := parentNotes(t, h, id); n != 1 {
			t.Fatalf("run %s: its parent got its result %d times", id, n)
		}
		if ends := endEntries(t, h, id); ends != 1 {
			t.Fatalf("run %s: %d end entries", id, ends)
		}
	}
	time.Sleep(200 * time.Millisecond) // a second end would be written by now
	for _, id := range ids {
		if ends := endEntries(t, h, id); ends != 1 {
			t.Fatalf("run %s: %d end entries", id, ends)
		}
	}
	active, err := h.store.ListRuns(ctx, store.RunFilter{Active: true})
	if err != nil || len(active) != 0 {
		t.Fatalf("active runs left in the store: %d (%v)", len(active), err)
	}
	all, err := h.store.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(all) != n {
		raw, _ := json.Marshal(all)
		t.Fatalf("runs in the store: %d, want %d (the refused spawn stored nothing): %s", len(all), n, raw)
	}
}

// endEntries waits (up to 10 s) for the run's end entry in its parent's
// session file and returns how many there are.
func endEntries(t *testing.T, h *harness, id string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ends int
		for _, e := range lifecycleEntries(t, h, id) {
			if e.EventType == audit.SubagentComplete || e.EventType == audit.SubagentError || e.EventType == audit.SubagentAborted {
				ends++
			}
		}
		if ends > 0 || time.Now().After(deadline) {
			return ends
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An outage longer than the event hub's retry bound (a database paused
// for minutes) pauses the runs rather than ending them: their leased
// events and checkpoints wait for the store, and each run then ends
// success, with every event of its stream stored. (Before, a run's
// events gave up after the bound and the run ended error, "event
// publishing failed"; its checkpoint gave up after the same bound and
// the run ended timeout.)
func TestOutagePastTheBoundPausesRuns(t *testing.T) {
	gate := &gateTool{named: "read_file", entered: make(chan struct{}, 16), release: make(chan struct{})}
	h := newHarness(t, "turns:\n  - tool_calls: [{name: read_file, args: {path: a}}]\n  - text: done\n", nil, gate)
	ctx := context.Background()
	fs := &fullStore{Store: h.store}
	hub := event.NewHub(fs, sessionFiles(t, h.root))
	hub.SetOutageBound(200 * time.Millisecond)
	opts := h.opts
	opts.Store, opts.Hub, opts.MaxConcurrent = fs, hub, 8
	m := subagent.NewManager(opts)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 4
	ids := spawnAtTheGate(t, m, gate, "pause", n)
	fs.full.Store(true)
	close(gate.release)
	time.Sleep(1500 * time.Millisecond) // seven times the bound
	if fs.fails.Load() == 0 {
		t.Fatal("no write met the outage")
	}
	fs.full.Store(false)
	for _, id := range ids {
		r := waitRun(t, h, id)
		if r.Status != lifecycle.Success {
			t.Fatalf("run %s: %s (%s), want success after the outage", id, r.Status, r.Error)
		}
		evs, err := h.store.ReadEvents(ctx, store.SubagentSessionPrefix+id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var results, ends int
		for _, ev := range evs {
			switch ev.Type {
			case event.ToolResult:
				results++
			case event.SessionEnd:
				ends++
			}
		}
		if results != 1 || ends != 1 {
			t.Fatalf("run %s: %d tool results and %d ends stored, want one each", id, results, ends)
		}
	}
}

// spawnAtTheGate spawns n background researchers on m and waits until
// each is inside gate's tool call; it returns their IDs.
func spawnAtTheGate(t *testing.T, m *subagent.Manager, gate *gateTool, task string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		hd, err := m.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: task}, Parent: parent, Background: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, hd.ID())
	}
	for range n {
		select {
		case <-gate.entered:
		case <-time.After(20 * time.Second):
			t.Fatal("the runs' tool calls never started")
		}
	}
	return ids
}

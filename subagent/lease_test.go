package subagent_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// gateTool blocks each call until released, and counts its calls.
type gateTool struct {
	named
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gateTool) Run(ctx context.Context, in json.RawMessage) (tool.Result, error) {
	g.calls.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return g.named.Run(ctx, in)
}

// scriptedCatalog is a catalog whose every alias is script, recorded.
func scriptedCatalog(t *testing.T, script string) (*llm.Catalog, *recorder) {
	t.Helper()
	s, err := scripted.Parse("test", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Provider: scripted.NewWithScript(s), called: make(chan struct{}, 64)}
	cat := llm.NewCatalog(llm.Prices{"t": {Input: 10_000, Output: 10_000}})
	cat.Add(rec, map[string]string{"haiku": "t", "sonnet": "t", "opus": "t"})
	return cat, rec
}

// A process paused past its lease (a laptop asleep) beside another on
// the same store: the other takes its run over and finishes it. When the
// paused process wakes, its run makes no further model or tool call, and
// nothing it still writes reaches the store, the parent or the session
// file: the run ends once, with the second process's result.
func TestPausedOwnerStopsItsRunAndWritesNothing(t *testing.T) {
	gate := &gateTool{named: "read_file", entered: make(chan struct{}, 4), release: make(chan struct{})}
	h := newHarness(t, "turns:\n  - text: unused\n", nil, gate)
	ctx := context.Background()

	// Process A: its clock stands still while it is paused.
	var aNow atomic.Int64
	aNow.Store(time.Now().UnixNano())
	aClock := func() time.Time { return time.Unix(0, aNow.Load()) }
	a, err := instance.Start(ctx, instance.Options{Store: h.store, Clock: aClock, Heartbeat: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	aCat, aModel := scriptedCatalog(t, "turns:\n  - tool_calls: [{name: read_file, args: {path: a}}]\n  - text: A finished\n")
	optsA := h.opts
	optsA.Catalog, optsA.Owner, optsA.RecoverEvery = aCat, a, time.Hour
	mA := subagent.NewManager(optsA)
	if err := mA.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer mA.Close()
	hd, err := mA.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "sleep"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("A's tool call never started")
	}

	// Process B, an hour later by its clock: A's heartbeat is past the
	// TTL, so B takes A's run over at start and finishes it.
	b := laterInstance(t, h.store)
	bCat, _ := scriptedCatalog(t, "turns:\n  - text: B finished\n")
	optsB := h.opts
	optsB.Catalog, optsB.Owner, optsB.RecoverEvery = bCat, b, time.Hour
	mB := subagent.NewManager(optsB)
	if err := mB.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer mB.Close()
	got := waitRun(t, h, hd.ID())
	if got.Status != lifecycle.Success || got.Owner != b.ID() || got.Attempts != 1 {
		t.Fatalf("B's run: status %s owner %s attempts %d", got.Status, got.Owner, got.Attempts)
	}

	// A wakes up: its clock jumps, its tool call returns.
	aNow.Store(time.Now().Add(time.Hour).UnixNano())
	close(gate.release)
	res, err := hd.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == lifecycle.Success && res.Summary == "A finished" {
		t.Fatalf("A finished a run it no longer owned: %+v", res)
	}
	if n := len(aModel.requests()); n != 1 {
		t.Fatalf("A made %d model calls; want 1 (none after it lost the run)", n)
	}
	if n := gate.calls.Load(); n != 1 {
		t.Fatalf("the tool ran %d times; want 1 (B never reruns a call in flight)", n)
	}
	if a.ID() == got.Owner || hd.UUID() == "" {
		t.Fatal("A still holds its old lease")
	}
	after, err := h.store.GetRun(ctx, hd.ID())
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != lifecycle.Success || after.Owner != b.ID() || after.Tokens != got.Tokens || string(after.Result) != string(got.Result) {
		t.Fatalf("A's stale end reached the store: %+v", after)
	}
	if n := parentNotes(t, h, hd.ID()); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
	var ends int
	for _, e := range lifecycleEntries(t, h, hd.ID()) {
		if e.EventType == audit.SubagentComplete || e.EventType == audit.SubagentError || e.EventType == audit.SubagentAborted {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d end entries in the session file; want 1", ends)
	}
}

// cutLog is an event log behind a network that can be cut: while cut,
// every append waits (a blackholed connection) until the link heals.
type cutLog struct {
	event.Log
	mu   sync.Mutex
	heal chan struct{} // nil: the link is up
	held atomic.Int32  // appends waiting for the link
}

func (l *cutLog) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heal = make(chan struct{})
}

func (l *cutLog) restore() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.heal)
	l.heal = nil
}

func (l *cutLog) AppendEvents(ctx context.Context, evs []event.Event) error {
	l.mu.Lock()
	heal := l.heal
	l.mu.Unlock()
	if heal != nil {
		l.held.Add(1)
		defer l.held.Add(-1)
		select {
		case <-heal:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return l.Log.AppendEvents(ctx, evs)
}

// A process paused and cut off from the store mid tool call (issue 39):
// another process takes its run over and finishes it. The paused process
// wakes, its tool call returns and the loop publishes the call's events
// before its next lease check (which then finds the lease lost): they
// queue up behind the link, which heals afterwards. The store refuses
// every one of them: nothing it had queued lands in the run's stream
// after the takeover or after the other process's SessionEnd (before,
// its ToolResult was stored after that SessionEnd), and nothing of its
// end is published.
func TestPausedOwnersBufferedEventsNeverLand(t *testing.T) {
	gate := &gateTool{named: "read_file", entered: make(chan struct{}, 4), release: make(chan struct{})}
	h := newHarness(t, "turns:\n  - text: unused\n", nil, gate)
	ctx := context.Background()

	// Process A: its clock stands still while it is paused; it learns
	// that it lost its lease only at its loop's next check.
	var aNow atomic.Int64
	aNow.Store(time.Now().UnixNano())
	aClock := func() time.Time { return time.Unix(0, aNow.Load()) }
	a, err := instance.Start(ctx, instance.Options{Store: h.store, Clock: aClock, Heartbeat: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	link := &cutLog{Log: h.store}
	aCat, aModel := scriptedCatalog(t, "turns:\n  - tool_calls: [{name: read_file, args: {path: a}}]\n  - text: A finished\n")
	optsA := h.opts
	optsA.Catalog, optsA.Owner, optsA.RecoverEvery = aCat, a, time.Hour
	optsA.Hub = event.NewHub(link, sessionFiles(t, h.root))
	mA := subagent.NewManager(optsA)
	if err := mA.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer mA.Close()
	hd, err := mA.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "sleep"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("A's tool call never started")
	}
	link.cut()

	// Process B, an hour later by its clock, takes the run over and
	// finishes it.
	b := laterInstance(t, h.store)
	bCat, _ := scriptedCatalog(t, "turns:\n  - text: B finished\n")
	optsB := h.opts
	optsB.Catalog, optsB.Owner, optsB.RecoverEvery = bCat, b, time.Hour
	mB := subagent.NewManager(optsB)
	if err := mB.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer mB.Close()
	got := waitRun(t, h, hd.ID())
	if got.Status != lifecycle.Success || got.Owner != b.ID() {
		t.Fatalf("B's run: status %s owner %s", got.Status, got.Owner)
	}
	key := store.SubagentSessionPrefix + hd.ID()
	before, err := h.store.ReadEvents(ctx, key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}

	// A wakes, still cut off: its clock jumps, its tool call returns and
	// its events queue up behind the link. Then the link heals.
	aNow.Store(time.Now().Add(time.Hour).UnixNano())
	close(gate.release)
	deadline := time.Now().Add(20 * time.Second)
	for link.held.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if link.held.Load() == 0 {
		t.Fatal("A queued no event while cut off")
	}
	link.restore()
	res, err := hd.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary == "A finished" {
		t.Fatalf("A finished a run it no longer owned: %+v", res)
	}
	if n := len(aModel.requests()); n != 1 {
		t.Fatalf("A made %d model calls; want 1 (none after it lost the run)", n)
	}
	if r, _ := h.store.GetRun(ctx, hd.ID()); r.Status != got.Status || r.Owner != b.ID() || string(r.Result) != string(got.Result) {
		t.Fatalf("A's stale end reached the store: %+v", r)
	}
	after, err := h.store.ReadEvents(ctx, key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		for _, ev := range after[len(before):] {
			t.Errorf("stored after B's end: #%d %s %s", ev.Seq, ev.Type, ev.Content)
		}
		t.Fatalf("%d events in the run's stream after B ended it, want none", len(after)-len(before))
	}
	if last := after[len(after)-1]; last.Type != event.SessionEnd {
		t.Fatalf("the stream ends with %s, want B's SessionEnd", last.Type)
	}
	if n := parentNotes(t, h, hd.ID()); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
	var ends int
	for _, e := range lifecycleEntries(t, h, hd.ID()) {
		if e.EventType == audit.SubagentComplete || e.EventType == audit.SubagentError || e.EventType == audit.SubagentAborted {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d end entries in the session file; want 1", ends)
	}
}

// gateSink is a hub sink (the session files) that holds each
// SubagentComplete until released: a process slow to write its run's end
// entry.
type gateSink struct {
	event.Sink
	entered chan struct{}
	release chan struct{}
}

func (g gateSink) Deliver(ev event.Event) error {
	if ev.Type == event.SubagentComplete {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.Sink.Deliver(ev)
}

// A process that loses its lease (paused past it: another process
// removed its registration, and it registers again under a new ID)
// while one of its runs ends: its end recorded by this process's write,
// its end entry about to be written. Its recovery sweep then finds the
// run's owner, its own old ID, gone, and the run's result unannounced:
// it must leave the run's end to the write that recorded it, and not
// write the end entry too (issue 39, item 3: the end entry written
// twice after a long PostgreSQL pause).
func TestLostLeaseRecoveryWritesNoSecondEnd(t *testing.T) {
	var aNow atomic.Int64
	aNow.Store(time.Now().UnixNano())
	var a *instance.Instance
	h := newHarness(t, "turns:\n  - text: done\n", func(o *subagent.Options) {
		var err error
		a, err = instance.Start(context.Background(), instance.Options{Store: o.Store, Heartbeat: 10 * time.Second,
			Clock: func() time.Time { return time.Unix(0, aNow.Load()) }})
		if err != nil {
			t.Fatal(err)
		}
		o.Owner, o.RecoverEvery = a, time.Hour
	})
	defer a.Close()
	ctx := context.Background()
	// A manager that writes missing entries at recovery, as a daemon's,
	// whose session files are slow to take the end entry.
	gate := gateSink{Sink: sessionFiles(t, h.root), entered: make(chan struct{}, 1), release: make(chan struct{})}
	opts := h.opts
	opts.LifecycleFiles, opts.Hub = sessionFiles(t, h.root), event.NewHub(h.store, gate)
	m := subagent.NewManager(opts)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hd, err := m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "t"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.entered: // the end is recorded; its entry is on its way
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end")
	}
	old := a.ID()
	if r, _ := h.store.GetRun(ctx, hd.ID()); !r.Status.Final() || r.Announced || r.Owner != old {
		t.Fatalf("run as its end entry is written: %s, announced %v, owner %s", r.Status, r.Announced, r.Owner)
	}
	// Another process removes this one's registration; this one finds
	// out at its next lease check and registers again; then its
	// recovery sweep runs.
	if err := h.store.RemoveInstance(ctx, old); err != nil {
		t.Fatal(err)
	}
	aNow.Store(time.Now().Add(time.Hour).UnixNano())
	if err := a.Hold(ctx, old); err == nil || a.ID() == old {
		t.Fatalf("the lease was not found lost: %v", err)
	}
	if err := m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	wait(t, hd)
	var ends int
	for _, e := range lifecycleEntries(t, h, hd.ID()) {
		if e.EventType == audit.SubagentComplete || e.EventType == audit.SubagentError || e.EventType == audit.SubagentAborted {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d end entries in the session file; want 1", ends)
	}
	if n := parentNotes(t, h, hd.ID()); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
}

// laterInstance starts an instance whose clock is an hour ahead (a
// process that starts after another one paused) and has since seen the
// store answer for longer than the TTL, so that it judges heartbeats by
// age (instance: a process starts judging by age one TTL after it
// registered).
func laterInstance(t *testing.T, st store.OwnerStore) *instance.Instance {
	t.Helper()
	var ahead atomic.Int64
	ahead.Store(int64(time.Hour))
	b, err := instance.Start(context.Background(), instance.Options{Store: st, Clock: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ahead.Add(int64(instance.DefaultTTL + time.Second))
	return b
}

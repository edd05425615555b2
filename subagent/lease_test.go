package subagent_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
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
	b, err := instance.Start(ctx, instance.Options{Store: h.store, Clock: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
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

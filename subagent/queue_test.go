package subagent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// gate is a model that holds every call until the test lets one through
// (or the call's context ends), and counts the calls in flight.
type gate struct {
	llm.Provider
	release chan struct{}
	entered chan string // the task of each call, as it arrives

	mu       sync.Mutex
	inFlight int
	peak     int
}

func (g *gate) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Response, error) {
	g.mu.Lock()
	g.inFlight++
	g.peak = max(g.peak, g.inFlight)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	g.entered <- strings.TrimPrefix(req.Messages[0].TextContent(), "Begin the task: ")
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return g.Provider.Stream(ctx, req, on)
}

func (g *gate) peakInFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

// newGated builds a harness whose every model is a gate over a scripted
// "done" answer; adjust sets the manager's options.
func newGated(t *testing.T, adjust func(*subagent.Options)) (*harness, *gate) {
	t.Helper()
	s, err := scripted.Parse("test", []byte("turns:\n  - text: done\n  - text: again\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{Provider: scripted.NewWithScript(s), release: make(chan struct{}), entered: make(chan string, 100)}
	h := newHarness(t, "turns:\n  - text: unused\n", func(o *subagent.Options) {
		cat := llm.NewCatalog(llm.Prices{"t": {Input: 10_000, Output: 10_000}})
		cat.Add(g, map[string]string{"haiku": "t", "sonnet": "t", "opus": "t"})
		o.Catalog = cat
		if adjust != nil {
			adjust(o)
		}
	})
	return h, g
}

// next returns the task of the next model call to arrive.
func (g *gate) next(t *testing.T) string {
	t.Helper()
	select {
	case task := <-g.entered:
		return task
	case <-time.After(20 * time.Second):
		t.Fatal("no model call arrived")
		return ""
	}
}

func tasks(n int) []subagent.Config {
	cfgs := make([]subagent.Config, n)
	for i := range cfgs {
		cfgs[i] = subagent.Config{Role: "researcher", Task: fmt.Sprintf("t%d", i+1)}
	}
	return cfgs
}

// lifecycleOf returns the lifecycle entry types of one job, in order.
func lifecycleOf(t *testing.T, root, job string) []audit.LifecycleType {
	t.Helper()
	var types []audit.LifecycleType
	err := audit.ScanLifecycle(sessionFile(t, root), func(e audit.LifecycleEntry) error {
		if e.JobID == job {
			types = append(types, e.EventType)
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// A parallel batch of 8 under a limit of 4 runs 4 at a time, the waiting
// ones in task order, and all 8 succeed; a single spawn meanwhile is
// still refused (the default policy).
func TestBatchBeyondTheLimitWaitsForSlots(t *testing.T) {
	h, g := newGated(t, func(o *subagent.Options) { o.MaxConcurrent = 4 })
	ctx := context.Background()
	grp, err := h.m.SpawnGroup(ctx, subagent.GroupRequest{Configs: tasks(8), Mode: subagent.ModeParallel, Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		g.next(t)
	}
	hs := grp.Handles()
	for i, hd := range hs[4:] {
		st := hd.Status()
		if st.Status != lifecycle.Queued || st.QueuePosition != i+1 {
			t.Fatalf("task %d: %s at position %d, want queued at %d", i+5, st.Status, st.QueuePosition, i+1)
		}
		run, err := h.store.GetRun(ctx, hd.ID())
		if err != nil || run.Status != lifecycle.Queued {
			t.Fatalf("task %d stored as %s (%v)", i+5, run.Status, err)
		}
	}
	_, err = h.m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "single"}, Parent: parent})
	if !errors.Is(err, subagent.ErrLimit) || !strings.Contains(err.Error(), "AVA_SPAWN_OVERFLOW=queue") {
		t.Fatalf("single spawn while the batch waits: %v", err)
	}
	for i := 5; i <= 8; i++ {
		g.release <- struct{}{}
		if got, want := g.next(t), fmt.Sprintf("t%d", i); got != want {
			t.Fatalf("started %s, want %s (first come, first served)", got, want)
		}
	}
	for range 4 {
		g.release <- struct{}{}
	}
	rs, err := grp.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Status != lifecycle.Success {
			t.Fatalf("task %d: %s (%s)", i+1, r.Status, r.Error)
		}
	}
	if p := g.peakInFlight(); p != 4 {
		t.Fatalf("at most %d ran at once, want 4", p)
	}
	want := []audit.LifecycleType{audit.SubagentQueued, audit.SubagentStart, audit.SubagentComplete}
	if got := lifecycleOf(t, h.root, hs[7].ID()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lifecycle of a queued member: %v, want %v", got, want)
	}
	if got := lifecycleOf(t, h.root, hs[0].ID()); fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Fatalf("lifecycle of a member that started at once: %v", got)
	}
}

// With the queue policy single spawns wait, show their place, can be
// cancelled without ever calling the model, and the queue is bounded.
func TestQueuePolicyQueuesSingleSpawns(t *testing.T) {
	h, g := newGated(t, func(o *subagent.Options) {
		o.MaxConcurrent, o.Overflow, o.MaxQueued = 1, subagent.OverflowQueue, 2
	})
	ctx := tool.WithCaller(context.Background(), parent)
	spawn := func(task string) (*subagent.Handle, error) {
		return h.m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: task}, Parent: parent})
	}
	a, _ := spawn("a")
	g.next(t)
	b, err := spawn("b")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := spawn("c")
	if st := c.Status(); st.Status != lifecycle.Queued || st.QueuePosition != 2 {
		t.Fatalf("c: %+v", st)
	}
	_, err = spawn("d")
	if !errors.Is(err, subagent.ErrQueueFull) || !strings.Contains(err.Error(), "AVA_MAX_QUEUED_SUBAGENTS=2") {
		t.Fatalf("spawn beyond the queue: %v", err)
	}
	tools := h.m.Tools()
	res, _ := tools[2].Run(ctx, mustJSON(subagent.IDArgs{SubagentID: c.ID()}))
	if !strings.Contains(res.Output, `"queue_position": 2`) || !strings.Contains(res.Output, "#2 in line") {
		t.Fatalf("subagent_status of a queued run:\n%s", res.Output)
	}
	res, _ = tools[3].Run(ctx, mustJSON(subagent.ListArgs{}))
	if !strings.Contains(res.Output, b.ID()+" researcher queued (#1") {
		t.Fatalf("list_subagents:\n%s", res.Output)
	}
	if res, _ := tools[4].Run(ctx, mustJSON(subagent.IDArgs{SubagentID: b.ID()})); res.IsError {
		t.Fatal(res.Output)
	}
	r := wait(t, b)
	if r.Status != lifecycle.Cancelled || !strings.Contains(r.Summary, "never started") {
		t.Fatalf("cancelled queued run: %+v", r)
	}
	if st := c.Status(); st.QueuePosition != 1 {
		t.Fatalf("c after b left: %+v", st)
	}
	if run, _ := h.store.GetRun(ctx, b.ID()); run.Status != lifecycle.Cancelled || run.StartedAt != nil {
		t.Fatalf("b stored %s started %v", run.Status, run.StartedAt)
	}
	want := []audit.LifecycleType{audit.SubagentQueued, audit.SubagentAborted}
	if got := lifecycleOf(t, h.root, b.ID()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lifecycle of a cancelled queued run: %v", got)
	}
	d, err := spawn("d")
	if err != nil {
		t.Fatalf("b's place is free again: %v", err)
	}
	for _, want := range []string{"c", "d"} {
		g.release <- struct{}{}
		if got := g.next(t); got != want {
			t.Fatalf("started %s, want %s", got, want)
		}
	}
	g.release <- struct{}{}
	for _, hd := range []*subagent.Handle{a, c, d} {
		if r := wait(t, hd); r.Status != lifecycle.Success {
			t.Fatalf("%s: %s", hd.ID(), r.Status)
		}
	}
	select {
	case task := <-g.entered:
		t.Fatalf("the model was called for %s", task)
	default:
	}
}

// A group whose combined timeout expires while members still wait ends
// them with timeout, never started, and the group returns.
func TestGroupTimeoutEndsQueuedMembers(t *testing.T) {
	h, g := newGated(t, func(o *subagent.Options) { o.MaxConcurrent = 1 })
	grp, err := h.m.SpawnGroup(context.Background(), subagent.GroupRequest{Configs: tasks(3), Mode: subagent.ModeParallel,
		Parent: parent, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	g.next(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rs, err := grp.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Status != lifecycle.Timeout {
			t.Fatalf("member %d: %s", i+1, r.Status)
		}
		if i > 0 && !strings.Contains(r.Summary, "never started") {
			t.Fatalf("member %d: %q", i+1, r.Summary)
		}
	}
	if len(g.entered) != 0 {
		t.Fatal("a queued member called the model")
	}
}

// Spawns, groups, follow-ups and cancels at random points never leak a
// slot or a place in the queue: afterwards a new spawn runs at once.
func TestQueueStressNoSlotLeak(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: ok\n    delay: 2ms\n  - text: again\n", func(o *subagent.Options) {
		o.MaxConcurrent, o.Overflow, o.MaxQueued = 2, subagent.OverflowQueue, 64
	})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			var hs []*subagent.Handle
			if i%5 == 0 {
				grp, err := h.m.SpawnGroup(ctx, subagent.GroupRequest{Configs: tasks(3), Mode: subagent.ModeParallel, Parent: parent,
					Timeout: time.Duration(r.IntN(30)+1) * time.Millisecond})
				if err != nil {
					return
				}
				hs = grp.Handles()
			} else {
				hd, err := h.m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: fmt.Sprint("s", i)}, Parent: parent})
				if err != nil {
					return
				}
				hs = []*subagent.Handle{hd}
			}
			time.Sleep(time.Duration(r.IntN(5000)) * time.Microsecond)
			if r.IntN(2) == 0 {
				hs[r.IntN(len(hs))].Cancel()
			}
			for _, hd := range hs {
				hd.Wait(ctx)
			}
			if r.IntN(3) == 0 {
				if hd, err := h.m.Send(ctx, hs[0].ID(), "more", false); err == nil {
					if r.IntN(2) == 0 {
						hd.Cancel()
					}
					hd.Wait(ctx)
				}
			}
		})
	}
	wg.Wait()
	if n := h.m.Queued(); n != 0 {
		t.Fatalf("%d left in the queue", n)
	}
	if active, _ := subagent.HeldHandles(h.m); active != 0 {
		t.Fatalf("%d handles still active", active)
	}
	for range 2 {
		hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "after"})
		if st := hd.Status(); st.Status == lifecycle.Queued {
			t.Fatalf("a new spawn waits: a slot leaked (%+v)", st)
		}
		defer wait(t, hd)
	}
}

// A gone owner's queued runs are interrupted with its running ones.
func TestRecoverInterruptsQueuedRuns(t *testing.T) {
	h, g := newGated(t, func(o *subagent.Options) { o.MaxConcurrent, o.Overflow = 1, subagent.OverflowQueue })
	ctx := context.Background()
	a := h.spawn(t, subagent.Config{Role: "researcher", Task: "a"})
	g.next(t)
	b := h.spawn(t, subagent.Config{Role: "researcher", Task: "b"})
	// a called its model, so its record says running (Handle.recordRun).
	if run, err := h.store.GetRun(ctx, a.ID()); err != nil || run.Status != lifecycle.Running {
		t.Fatalf("a: %s %v", run.Status, err)
	}
	second, err := instance.Start(ctx, instance.Options{Store: h.store})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	opts := h.opts
	opts.Hub, opts.Owner = event.NewHub(h.store, sessionFiles(t, h.root)), second
	opts.ResumeAttempts = -1 // resuming is tested in resume_test.go
	m2 := subagent.NewManager(opts)
	defer m2.Close()
	if err := h.store.RemoveInstance(ctx, h.opts.Owner.ID()); err != nil {
		t.Fatal(err)
	}
	if err := m2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, hd := range []*subagent.Handle{a, b} {
		if run, _ := h.store.GetRun(ctx, hd.ID()); run.Status != lifecycle.Interrupted {
			t.Fatalf("%s: %s after its owner went", hd.ID(), run.Status)
		}
	}
	want := []audit.LifecycleType{audit.SubagentQueued, audit.SubagentAborted}
	if got := lifecycleOf(t, h.root, b.ID()); fmt.Sprint(got[:2]) != fmt.Sprint(want) {
		t.Fatalf("lifecycle of the interrupted queued run: %v", got)
	}
}

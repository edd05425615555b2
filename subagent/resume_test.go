package subagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/transcript"
)

// countingTool counts its runs.
type countingTool struct {
	named
	runs atomic.Int32
}

func (c *countingTool) Run(ctx context.Context, in json.RawMessage) (tool.Result, error) {
	c.runs.Add(1)
	return c.named.Run(ctx, in)
}

// seedDeadRun stores a run as a process that died left it: running,
// owned by an instance that is not registered (so gone), resumed
// attempts times, with conv as its checkpointed conversation.
func seedDeadRun(t *testing.T, h *harness, short, role string, attempts int, conv []llm.Message) store.Run {
	t.Helper()
	ctx := context.Background()
	cfg, _ := json.Marshal(subagent.Config{Role: role, Task: "resume me"})
	start := time.Now().Add(-time.Minute)
	r := store.Run{ID: uuid.NewString(), ShortID: short, SessionKey: store.SubagentSessionPrefix + short,
		ParentSession: parent.SessionKey, ParentAgent: parent.AgentID, Mode: store.ModeSingle, Role: role, Task: "resume me",
		Config: cfg, Status: lifecycle.Running, StartedAt: &start, Owner: "dead-" + short, Attempts: attempts, Iterations: 1, Tokens: 50}
	if err := h.store.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	msgs, err := transcript.ToStore(r.SessionKey, short, conv)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.AppendMessages(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitRun waits until the stored run has ended.
func waitRun(t *testing.T, h *harness, id string) store.Run {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, err := h.store.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Final() && r.Announced {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %s did not end and reach its parent", id)
	return store.Run{}
}

func parentNotes(t *testing.T, h *harness, short string) int {
	t.Helper()
	msgs, err := h.store.Messages(context.Background(), parent.SessionKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if strings.Contains(m.Text, "Subagent "+short+" finished") {
			n++
		}
	}
	return n
}

func lifecycleEntries(t *testing.T, h *harness, job string) []audit.LifecycleEntry {
	t.Helper()
	var out []audit.LifecycleEntry
	err := audit.ScanLifecycle(sessionFile(t, h.root), func(e audit.LifecycleEntry) error {
		if e.JobID == job {
			out = append(out, e)
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A tool call in flight when the process died is never run again: the
// resumed run's model is told its result is unknown, and goes on from
// there; the result reaches the parent once, with a subagent:resumed
// entry (attempt 1) before its end entry.
func TestResumeTellsTheModelAnInFlightCallIsUnknown(t *testing.T) {
	reader := &countingTool{named: "read_file"}
	h := newHarness(t, "turns:\n  - text: unused\n  - text: 'went on after: {{last_result}}'\n", nil, reader)
	call := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("reading"),
		{Type: llm.BlockToolCall, ToolCallID: "call-1", ToolName: "read_file", Input: json.RawMessage(`{"path":"x"}`)}}}
	r := seedDeadRun(t, h, "S-a1a1a1", "researcher", 0, []llm.Message{llm.UserText("Begin the task: resume me"), call})
	if err := h.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, h, r.ID)
	if got.Status != lifecycle.Success || got.Attempts != 1 || got.Owner == r.Owner {
		t.Fatalf("resumed run: status %s attempts %d owner %q", got.Status, got.Attempts, got.Owner)
	}
	if n := reader.runs.Load(); n != 0 {
		t.Fatalf("the in-flight tool ran again %d times", n)
	}
	reqs := h.model.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	msgs := reqs[0].Messages
	last := msgs[len(msgs)-1]
	if len(msgs) != 3 || last.Role != llm.RoleUser || last.Content[0].Type != llm.BlockToolResult ||
		last.Content[0].ToolCallID != "call-1" || !last.Content[0].IsError || !strings.Contains(last.Content[0].Content, "result unknown") {
		t.Fatalf("resumed request's messages: %+v", msgs)
	}
	var res subagent.Result
	_ = json.Unmarshal(got.Result, &res)
	if !strings.Contains(string(res.Output), "result unknown") {
		t.Fatalf("result output %s", res.Output)
	}
	if got.Iterations != 2 || got.Tokens <= 50 {
		t.Fatalf("counters of the whole run: %d iterations, %d tokens", got.Iterations, got.Tokens)
	}
	if n := parentNotes(t, h, r.ShortID); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
	entries := lifecycleEntries(t, h, r.ShortID)
	if len(entries) != 2 || entries[0].EventType != audit.SubagentResumed || entries[0].Attempt != 1 ||
		entries[1].EventType != audit.SubagentComplete || entries[1].Attempt != 1 {
		t.Fatalf("lifecycle entries %+v", entries)
	}
	// The whole conversation is stored: the unknown result and the answer
	// after the checkpointed call.
	conv, _ := h.store.Messages(context.Background(), r.SessionKey, 0)
	if len(conv) != 4 {
		t.Fatalf("stored conversation has %d messages, want 4", len(conv))
	}
	// A second recovery finds nothing to do: announced once.
	if err := h.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := parentNotes(t, h, r.ShortID); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
}

// A checkpoint whose last message holds the tools' results (the next
// model call was on its way) resumes with that message as the input,
// not stored twice.
func TestResumeFromStoredToolResults(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: unused\n  - text: finished\n", nil)
	call := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		{Type: llm.BlockToolCall, ToolCallID: "c", ToolName: "read_file", Input: json.RawMessage(`{}`)}}}
	results := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("c", "file text", false)}}
	r := seedDeadRun(t, h, "S-a2a2a2", "researcher", 1, []llm.Message{llm.UserText("Begin the task: resume me"), call, results})
	if err := h.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, h, r.ID)
	if got.Status != lifecycle.Success || got.Attempts != 2 {
		t.Fatalf("status %s attempts %d", got.Status, got.Attempts)
	}
	conv, _ := h.store.Messages(context.Background(), r.SessionKey, 0)
	if len(conv) != 4 || conv[3].Text != "finished" {
		t.Fatalf("stored conversation: %d messages", len(conv))
	}
}

// A run that used up its resume attempts is quarantined: interrupted,
// never revived, its parent told once, its end entry says so.
func TestQuarantineAfterAttempts(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: never\n", func(o *subagent.Options) { o.ResumeAttempts = 2 })
	r := seedDeadRun(t, h, "S-a3a3a3", "researcher", 2, []llm.Message{llm.UserText("Begin the task: resume me")})
	if err := h.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, h, r.ID)
	if got.Status != lifecycle.Interrupted || got.Error != store.QuarantinedError || got.Attempts != 2 {
		t.Fatalf("status %s error %q attempts %d", got.Status, got.Error, got.Attempts)
	}
	if n := len(h.model.requests()); n != 0 {
		t.Fatalf("a quarantined run called its model %d times", n)
	}
	if n := parentNotes(t, h, r.ShortID); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
	entries := lifecycleEntries(t, h, r.ShortID)
	if len(entries) != 1 || entries[0].EventType != audit.SubagentAborted || !strings.Contains(entries[0].Summary, "quarantined") ||
		entries[0].Attempt != 2 {
		t.Fatalf("lifecycle entries %+v", entries)
	}
}

// A role with process tools does not resume: its run is interrupted and
// its parent told.
func TestRoleWithProcessToolsIsNotResumed(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: never\n", nil)
	r := seedDeadRun(t, h, "S-a4a4a4", "code_reviewer", 0, []llm.Message{llm.UserText("Begin the task: resume me")})
	if err := h.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, h, r.ID)
	if got.Status != lifecycle.Interrupted || got.Attempts != 0 || len(h.model.requests()) != 0 {
		t.Fatalf("status %s attempts %d calls %d", got.Status, got.Attempts, len(h.model.requests()))
	}
	if n := parentNotes(t, h, r.ShortID); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
}

// Each step is stored as it completes: the model's call before its tool
// runs, the tool's result before the next model call returns.
func TestCheckpointAfterEachStep(t *testing.T) {
	h := newHarness(t, "turns:\n  - tool_calls: [{name: read_file, args: {path: a}}]\n  - text: late\n    delay: 1h\n", nil)
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "step"})
	h.model.waitCall(t)
	h.model.waitCall(t) // the second call waits an hour
	deadline := time.Now().Add(10 * time.Second)
	var conv []store.Message
	for time.Now().Before(deadline) {
		conv, _ = h.store.Messages(context.Background(), hd.SessionKey(), 0)
		if len(conv) == 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(conv) != 3 || conv[0].Role != store.RoleUser || conv[1].Role != store.RoleAssistant || conv[2].Role != store.RoleUser ||
		!strings.Contains(string(conv[2].Blocks), "ran read_file") {
		t.Fatalf("conversation while the second call waits: %+v", conv)
	}
	run, _ := h.store.GetRun(context.Background(), hd.ID())
	if run.Iterations != 1 || run.Tokens == 0 {
		t.Fatalf("counters at the checkpoint: %d iterations, %d tokens", run.Iterations, run.Tokens)
	}
	hd.Cancel()
	wait(t, hd)
	conv, _ = h.store.Messages(context.Background(), hd.SessionKey(), 0)
	if len(conv) != 3 {
		t.Fatalf("after the end: %d messages, want the 3 checkpointed, none twice", len(conv))
	}
}

// blocker blocks model calls until their context ends while block is set.
type blocker struct {
	llm.Provider
	block   atomic.Bool
	entered chan struct{}
}

func (b *blocker) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Response, error) {
	if b.block.Load() && len(req.Messages) > 1 {
		b.entered <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return b.Provider.Stream(ctx, req, on)
}

// A shutdown (a deploy) leaves a resumable run for the next process,
// which resumes it from its last checkpoint; it is not ended
// interrupted in between, and its result reaches the parent once.
func TestShutdownLeavesResumableRunsToTheNextProcess(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: unused\n", nil)
	cat, b := blockedCatalog(t)
	opts := h.opts
	opts.Catalog = cat
	first, err := instance.Start(context.Background(), instance.Options{Store: h.store})
	if err != nil {
		t.Fatal(err)
	}
	opts.Owner = first
	m1 := subagent.NewManager(opts)
	if err := m1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hd, err := m1.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: "deploy"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the second model call never came")
	}
	m1.Close()
	first.Close()
	run, _ := h.store.GetRun(context.Background(), hd.ID())
	if run.Status != lifecycle.Running || run.Owner != first.ID() {
		t.Fatalf("after the shutdown: status %s owner %s", run.Status, run.Owner)
	}
	if n := parentNotes(t, h, hd.ID()); n != 0 {
		t.Fatalf("the parent was told %d times of a run that did not end", n)
	}
	b.block.Store(false)
	second, err := instance.Start(context.Background(), instance.Options{Store: h.store})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	opts.Owner = second
	m2 := subagent.NewManager(opts)
	if err := m2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	got := waitRun(t, h, hd.ID())
	if got.Status != lifecycle.Success || got.Attempts != 1 || got.Owner != second.ID() {
		t.Fatalf("resumed: status %s attempts %d owner %s", got.Status, got.Attempts, got.Owner)
	}
	if n := parentNotes(t, h, hd.ID()); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
	var types []audit.LifecycleType
	for _, e := range lifecycleEntries(t, h, hd.ID()) {
		types = append(types, e.EventType)
	}
	if fmt.Sprint(types) != fmt.Sprint([]audit.LifecycleType{audit.SubagentStart, audit.SubagentResumed, audit.SubagentComplete}) {
		t.Fatalf("lifecycle %v", types)
	}
}

// blockedCatalog is a catalog whose model blocks on its second call (a
// tool call, then an answer) while b.block is set.
func blockedCatalog(t *testing.T) (*llm.Catalog, *blocker) {
	t.Helper()
	s, err := scripted.Parse("test", []byte("turns:\n  - tool_calls: [{name: read_file, args: {path: a}}]\n  - text: finished later\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := &blocker{Provider: scripted.NewWithScript(s), entered: make(chan struct{}, 4)}
	b.block.Store(true)
	cat := llm.NewCatalog(llm.Prices{"t": {Input: 10_000, Output: 10_000}})
	cat.Add(b, map[string]string{"haiku": "t", "sonnet": "t", "opus": "t"})
	return cat, b
}

// A shutdown leaves a queued run that never started queued under its
// process (issue 39 item 9: it used to end interrupted): the next process
// starts it, and its parent hears of it once, when it ends.
func TestShutdownLeavesQueuedRunsQueued(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: unused\n", nil)
	cat, b := blockedCatalog(t)
	opts := h.opts
	opts.Catalog, opts.MaxConcurrent, opts.Overflow = cat, 1, subagent.OverflowQueue
	first, err := instance.Start(context.Background(), instance.Options{Store: h.store})
	if err != nil {
		t.Fatal(err)
	}
	opts.Owner = first
	m1 := subagent.NewManager(opts)
	if err := m1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	running, err := m1.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: "first"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the second model call never came")
	}
	queued, err := m1.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: "second"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := queued.Status().Status; st != lifecycle.Queued {
		t.Fatalf("the second run is %s, want queued", st)
	}
	m1.Close()
	first.Close()
	run, _ := h.store.GetRun(context.Background(), queued.ID())
	if run.Status != lifecycle.Queued || run.Owner != first.ID() {
		t.Fatalf("after the shutdown the queued run is %s (owner %s), want queued under the first process", run.Status, run.Owner)
	}
	b.block.Store(false)
	second, err := instance.Start(context.Background(), instance.Options{Store: h.store})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	opts.Owner = second
	m2 := subagent.NewManager(opts)
	if err := m2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	for _, id := range []string{running.ID(), queued.ID()} {
		if got := waitRun(t, h, id); got.Status != lifecycle.Success {
			t.Fatalf("%s: %s (%s)", id, got.Status, got.Error)
		}
		if n := parentNotes(t, h, id); n != 1 {
			t.Fatalf("the parent got %s's result %d times", id, n)
		}
	}
}

package subagent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// The orchestrator spawns a background subagent, answers, and on its next
// turn sees the subagent's result: once, and once again after a restart.
func TestBackgroundResultReachesNextPromptExactlyOnce(t *testing.T) {
	script := `
conversations:
  - match: "specialized researcher"
    turns: [{text: "the answer is 42"}]
  - turns:
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: "find the answer", background: true}}]
      - text: "started it"
      - text: "it said so"
      - text: "still so"
`
	h := newHarness(t, script, nil)
	orch := func(m *subagent.Manager) *orchestrator.Orchestrator {
		reg, err := tool.NewRegistry(m.Tools()...)
		if err != nil {
			t.Fatal(err)
		}
		model, _ := h.opts.Catalog.Resolve("sonnet")
		return orchestrator.New(orchestrator.Config{Model: model, Tools: reg, Hub: h.hub, Sessions: h.store, History: orchestrator.StoreHistory{Store: h.store}})
	}
	o := orch(h.m)
	ctx := context.Background()
	res, err := o.Ask(ctx, orchestrator1, "", "please research")
	if err != nil || res.Status != lifecycle.Success || res.Text != "started it" {
		t.Fatalf("%+v %v", res, err)
	}
	runs, err := h.m.Runs(ctx, subagent.RunFilter{Session: orchestrator1})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d subagents (%v)", len(runs), err)
	}
	sub, err := h.m.Get(runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, sub)
	// A run's result is announced before its Wait returns (Handle.finish).
	if r, err := h.store.GetRun(ctx, sub.ID()); err != nil || !r.Announced {
		t.Fatalf("result not announced when the run ended: %+v %v", r, err)
	}
	if _, err := o.Ask(ctx, orchestrator1, "", "what did it find?"); err != nil {
		t.Fatal(err)
	}
	if n := countInLastPrompt(h.model, "the answer is 42"); n != 1 {
		t.Fatalf("result appears %d times in the next prompt, want 1", n)
	}
	if n := countInLastPrompt(h.model, "[Task: find the answer]"); n != 1 {
		t.Fatalf("[Task: …] prefix appears %d times", n)
	}
	// The orchestrator reads the result as untrusted data.
	if n := countInLastPrompt(h.model, "[Subagent] <untrusted source=\"subagent "+sub.ID()); n != 1 {
		t.Fatalf("the announced result is not in an untrusted block (%d)", n)
	}
	// Restart: a new manager on the same store does not announce it again.
	m2 := subagent.NewManager(h.opts)
	if err := m2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if _, err := orch(m2).Ask(ctx, orchestrator1, "", "again?"); err != nil {
		t.Fatal(err)
	}
	if n := countInLastPrompt(h.model, "the answer is 42"); n != 1 {
		t.Fatalf("after restart the result appears %d times, want 1", n)
	}
}

const orchestrator1 = "ava:cli:bg"

func countInLastPrompt(r *recorder, s string) int {
	reqs := r.requests()
	var last *llm.Request
	for _, q := range reqs {
		if !strings.Contains(q.System, "specialized") {
			last = q
		}
	}
	n := 0
	for _, m := range last.Messages {
		for _, b := range m.Content {
			n += strings.Count(b.Text+b.Content, s)
		}
	}
	return n
}

// A second process on the same data root leaves a live process's runs
// alone (issue 10: "ava roles" while "ava run" had subagents running
// marked them interrupted). Once the first process is gone, the run is
// ended as interrupted, its end is recorded everywhere a finished run's
// is, and its parent is told.
func TestOnlyGoneOwnersRunsAreInterrupted(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: never\n    delay: 1h\n", nil)
	ctx := context.Background()
	hd, err := h.m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "long"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	h.model.waitCall(t) // so it is stored as running
	<-hd.Spawned()      // and its start entry is written (published without waiting)
	st2, err := sqlite.Open(ctx, h.root+"/ava.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	second, err := instance.Start(ctx, instance.Options{Store: st2})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	opts := h.opts
	opts.Store, opts.Hub, opts.Owner = st2, event.NewHub(st2, sessionFiles(t, h.root)), second
	opts.ResumeAttempts = -1 // resuming is tested in resume_test.go
	m2 := subagent.NewManager(opts)
	if err := m2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if run, _ := st2.GetRun(ctx, hd.ID()); run.Status != "running" {
		t.Fatalf("a live process's run became %s when a second process started", run.Status)
	}
	// The first process is gone: its lease is removed, as when its
	// heartbeat is older than the TTL or its process ID is not alive.
	first := h.opts.Owner.ID()
	if err := st2.RemoveInstance(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := m2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	run, _ := st2.GetRun(ctx, hd.ID())
	if run.Status != "interrupted" || !run.Announced || run.Owner != first {
		t.Fatalf("status %s announced %v owner %s", run.Status, run.Announced, run.Owner)
	}
	msgs, _ := st2.Messages(ctx, parent.SessionKey, 0)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "interrupted") {
		t.Fatalf("parent messages %+v", msgs)
	}
	// The lifecycle file ends with subagent:aborted, with its duration.
	var entries []audit.LifecycleEntry
	if err := audit.ScanLifecycle(sessionFile(t, h.root), func(e audit.LifecycleEntry) error { entries = append(entries, e); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	last := entries[len(entries)-1]
	if last.EventType != audit.SubagentAborted || last.Status != "interrupted" || last.JobID != hd.ID() ||
		last.DurationMs != last.CompletedAt.Sub(last.StartedAt).Milliseconds() {
		t.Fatalf("last lifecycle entry %+v", last)
	}
	// Its own stream ends with how it ended; the parent's has the completion.
	own, err := st2.ReadEvents(ctx, hd.SessionKey(), 0, 0)
	if err != nil || len(own) == 0 || own[len(own)-1].Type != event.SessionEnd || !strings.Contains(string(own[len(own)-1].Content), "interrupted") {
		t.Fatalf("own events end %v %v", own, err)
	}
	pevs, _ := st2.ReadEvents(ctx, parent.SessionKey, 0, 0)
	if pevs[len(pevs)-1].Type != event.SubagentComplete {
		t.Fatalf("parent's last event %s", pevs[len(pevs)-1].Type)
	}
	_ = scripted.Name
}

// A forked subagent starts from the orchestrator's conversation so far; a
// fresh one sees only its task.
func TestForkStartsFromTheConversation(t *testing.T) {
	script := `
conversations:
  - match: "specialized researcher"
    turns: [{text: "forked answer"}]
  - turns:
      - tool_calls:
          - {name: spawn_subagent, args: {role: researcher, task: "continue", context_mode: fork}}
          - {name: spawn_subagent, args: {role: researcher, task: "fresh start"}}
      - text: "done"
`
	h := newHarness(t, script, nil)
	reg, _ := tool.NewRegistry(h.m.Tools()...)
	model, _ := h.opts.Catalog.Resolve("sonnet")
	o := orchestrator.New(orchestrator.Config{Model: model, Tools: reg, Hub: h.hub})
	if _, err := o.Ask(context.Background(), "ava:cli:fork", "", "the secret word is banana"); err != nil {
		t.Fatal(err)
	}
	var forked, fresh *llm.Request
	for _, r := range h.model.requests() {
		switch {
		case strings.Contains(r.System, "continue"):
			forked = r
		case strings.Contains(r.System, "fresh start"):
			fresh = r
		}
	}
	if forked == nil || fresh == nil {
		t.Fatal("subagents never called their model")
	}
	if len(forked.Messages) != 2 || forked.Messages[0].TextContent() != "the secret word is banana" || forked.Messages[1].Role != llm.RoleUser {
		t.Fatalf("forked history %+v", forked.Messages)
	}
	for _, m := range fresh.Messages {
		if strings.Contains(m.TextContent(), "banana") {
			t.Fatal("a fresh subagent saw the orchestrator's conversation")
		}
	}
}

// Shutting the manager down stops running subagents that do not resume
// as interrupted, and the next start tells their parent (resumable ones:
// TestShutdownLeavesResumableRunsToTheNextProcess).
func TestCloseInterruptsAndNextStartAnnounces(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: never\n    delay: 1h\n", func(o *subagent.Options) { o.ResumeAttempts = -1 })
	ctx := context.Background()
	hd, err := h.m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: "long"}, Parent: parent, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	h.model.waitCall(t)
	h.m.Close()
	if st := hd.Status().Status; st != lifecycle.Interrupted {
		t.Fatalf("status after Close: %s", st)
	}
	run, _ := h.store.GetRun(ctx, hd.ID())
	if run.Status != "interrupted" || run.Announced {
		t.Fatalf("stored %s announced %v", run.Status, run.Announced)
	}
	m2 := subagent.NewManager(h.opts)
	if err := m2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	msgs, _ := h.store.Messages(ctx, parent.SessionKey, 0)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "interrupted") || !strings.Contains(msgs[0].Text, "[Task: long]") {
		t.Fatalf("parent messages %+v", msgs)
	}
}

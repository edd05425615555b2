package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// stepsFake is a fake OpenAI-compatible model that asks for read_file
// until a conversation holds three tool results, then answers; every
// call takes delay. It counts the requests it got.
func stepsFake(t *testing.T, delay time.Duration) (*llmfake.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	fake := llmfake.NewOpenAI(t)
	fake.Respond = func(req llmfake.Request) llmfake.Turn {
		n.Add(1)
		if bytes.Count(req.Raw, []byte(`"role":"tool"`)) < 3 {
			return llmfake.Turn{ToolCalls: []llmfake.ToolCall{{Name: "read_file", Args: `{"path":"notes.txt"}`}},
				Delay: delay, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}
		}
		return llmfake.Turn{Text: "done", Delay: delay, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}
	}
	return fake, &n
}

// TestPausedDaemonStopsItsRuns: daemon A is paused (SIGSTOP, a laptop
// asleep) past its lease beside daemon B on the same data root; B takes
// A's researchers over and finishes them, and ends A's code reviewers
// (a role that does not resume) as interrupted. After SIGCONT, A makes
// no further model or tool call for any of them, writes nothing over
// B's records, and each run ends once: one end entry.
func TestPausedDaemonStopsItsRuns(t *testing.T) {
	const runs = 6
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + root,
		"AVA_CONFIRM=never", "AVA_MAX_CONCURRENT_SUBAGENTS=20", "AVA_LEASE_TTL=3s", "AVA_RECOVER_EVERY=300ms",
		"OPENAI_API_KEY=test", "AVA_MODEL=openai/gpt-test"}
	fakeA, callsA := stepsFake(t, 700*time.Millisecond)
	fakeB, _ := stepsFake(t, 100*time.Millisecond)
	a := startDaemon(t, append(env, "OPENAI_BASE_URL="+fakeA.URL+"/v1"))
	b := startDaemon(t, append(env, "OPENAI_BASE_URL="+fakeB.URL+"/v1"))

	first := chatText(t, a.c, client.ChatRequest{Message: "hello"})
	var jobs []job
	for i := range runs {
		role := "researcher"
		if i%2 == 1 {
			role = "code_reviewer"
		}
		sa, _, err := a.c.Spawn(bg(t), client.SpawnRequest{Role: role, Task: fmt.Sprintf("task %d", i), Parent: first.Session})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job{sa.ID, role, "steps"})
	}
	waitAll(t, a.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" && sa.Iteration >= 2 })

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// B finds A's lease expired, takes the runs over and finishes them.
	want := func(j job) string {
		if j.role == "researcher" {
			return "success"
		}
		return "interrupted"
	}
	for _, j := range jobs {
		waitAll(t, b.c, []job{j}, func(sa client.Subagent) bool { return sa.Status == want(j) })
	}
	before := callsA.Load()
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // A's in-flight calls return; its runs would go on now
	if after := callsA.Load(); after != before {
		t.Fatalf("A made %d model calls after it woke up for runs it no longer owned", after-before)
	}
	for _, j := range jobs {
		sa, err := b.c.Subagent(context.Background(), j.id)
		if err != nil || sa.Status != want(j) {
			t.Fatalf("%s after A woke: %+v %v", j.id, sa, err)
		}
	}
	ends := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(data, "sessions", "*.jsonl"))
	for _, f := range files {
		err := audit.ScanLifecycle(f, func(e audit.LifecycleEntry) error {
			if e.EventType == audit.SubagentComplete || e.EventType == audit.SubagentError || e.EventType == audit.SubagentAborted {
				ends[e.JobID]++
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range jobs {
		if ends[j.id] != 1 {
			t.Fatalf("%s has %d end entries; want 1 (%v)", j.id, ends[j.id], ends)
		}
	}
	if code := stopDaemon(t, a); code != 0 {
		t.Fatalf("A exited %d\n%s", code, a.stderr)
	}
	stopDaemon(t, b)
}

// stopDaemon ends a daemon with SIGTERM and returns its exit code.
func stopDaemon(t *testing.T, d *daemon) int {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	return d.exitCode(t)
}

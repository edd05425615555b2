package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

// crashScript: each subagent reads a file, then its next model call is
// slow (FASTTASK: a few seconds; SLOWTASK: an hour), so that a daemon
// killed meanwhile leaves them with a checkpoint holding the call and
// its result.
const crashScript = `conversations:
  - match: "FASTTASK"
    turns:
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
      - text: "fast done: {{last_result}}"
        delay: 3s
  - match: "SLOWTASK"
    turns:
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
      - text: "never"
        delay: 1h
  - turns:
      - text: "hello back"
`

// TestDaemonCrashResumesOrInterruptsRuns kills ava serve with SIGKILL
// while 100 subagents run, three times, restarting it on the same data
// root each time. Runs whose role resumes (researcher) go on from their
// last checkpoint; the others (code_reviewer, with run_bash) end
// interrupted; runs that keep dying are quarantined after
// AVA_RESUME_ATTEMPTS. No lifecycle entry is lost, every result reaches
// its parent exactly once, and no run is resumed more than the limit.
func TestDaemonCrashResumesOrInterruptsRuns(t *testing.T) {
	const (
		fast     = 50 // researcher, finish after one resume
		slow     = 20 // researcher, die again after each resume
		reviewer = 30 // code_reviewer: never resumed
		attempts = 2
	)
	root := t.TempDir()
	script := filepath.Join(root, "script.yaml")
	if err := os.WriteFile(script, []byte(crashScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := "scripted/" + script
	data := filepath.Join(root, "data")
	operatorSubagentScript(t, data, script)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + root,
		"AVA_MODEL=" + model, "AVA_CONFIRM=never", "AVA_MAX_CONCURRENT_SUBAGENTS=120",
		fmt.Sprintf("AVA_RESUME_ATTEMPTS=%d", attempts)}

	d := startDaemon(t, env)
	first := chatText(t, d.c, client.ChatRequest{Message: "hello"})
	var (
		mu   sync.Mutex
		jobs []job
		wg   sync.WaitGroup
	)
	spawn := func(role, kind string, n int) {
		for i := range n {
			wg.Go(func() {
				sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: role, Task: fmt.Sprintf("%s %d", kind, i), Model: spawnModel, Parent: first.Session})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				jobs = append(jobs, job{sa.ID, role, kind})
				mu.Unlock()
			})
		}
	}
	spawn("researcher", "FASTTASK", fast)
	spawn("researcher", "SLOWTASK", slow)
	spawn("code_reviewer", "FASTTASK", reviewer)
	wg.Wait()
	if t.Failed() || len(jobs) != fast+slow+reviewer {
		t.Fatalf("spawned %d of %d", len(jobs), fast+slow+reviewer)
	}
	// Every run is in its second model call: its first call and the
	// tool's result are checkpointed.
	waitAll(t, d.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" && sa.Iteration >= 2 })
	kill(t, d)

	// Restart: researchers resume (attempt 1), code reviewers end
	// interrupted; the fast ones finish.
	d = startDaemon(t, env)
	var fastJobs []job
	for _, j := range jobs {
		if j.role == "researcher" && j.kind == "FASTTASK" {
			fastJobs = append(fastJobs, j)
		}
	}
	waitAll(t, d.c, fastJobs, func(sa client.Subagent) bool { return sa.Status == "success" && sa.Attempts == 1 })
	kill(t, d)
	// Attempt 2 for the slow ones, killed again at once; the next
	// start quarantines them.
	d = startDaemon(t, env)
	kill(t, d)
	d = startDaemon(t, env)
	waitAll(t, d.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.exitCode(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.stderr)
	}

	st, err := sqlite.Open(context.Background(), filepath.Join(data, "ava.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	parentMsgs, err := st.Messages(ctx, first.Session, 0)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string][]audit.LifecycleEntry{}
	files, _ := filepath.Glob(filepath.Join(data, "sessions", "*.jsonl"))
	for _, f := range files {
		var skipped []string
		err := audit.ScanLifecycle(f, func(e audit.LifecycleEntry) error {
			entries[e.JobID] = append(entries[e.JobID], e)
			return nil
		}, func(s audit.Skip) { skipped = append(skipped, fmt.Sprintf("%+v", s)) })
		if err != nil {
			t.Fatalf("scan %s: %v", f, err)
		}
		if len(skipped) > 0 {
			// A line torn by SIGKILL is reported and skipped; what it
			// held is written again by recovery (checked below).
			t.Logf("skipped in %s: %v", f, skipped)
		}
	}
	counts := map[string]int{}
	for _, j := range jobs {
		run, err := st.GetRun(ctx, j.id)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus, wantAttempts := lifecycle.Success, 1
		switch {
		case j.role == "code_reviewer":
			wantStatus, wantAttempts = lifecycle.Interrupted, 0
		case j.kind == "SLOWTASK":
			wantStatus, wantAttempts = lifecycle.Interrupted, attempts
		}
		if run.Status != wantStatus || run.Attempts != wantAttempts || !run.Announced {
			t.Errorf("%s %s %s: status %s attempts %d announced %v (want %s, %d)", j.id, j.role, j.kind, run.Status, run.Attempts, run.Announced, wantStatus, wantAttempts)
		}
		if j.kind == "SLOWTASK" && run.Error != store.QuarantinedError {
			t.Errorf("%s: error %q, want the quarantine", j.id, run.Error)
		}
		// The result reached the parent exactly once.
		n := 0
		for _, m := range parentMsgs {
			if strings.Contains(m.Text, "Subagent "+j.id+" finished") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: the parent got its result %d times", j.id, n)
		}
		// Its lifecycle: one start, one resumed entry per attempt
		// (numbered 1, 2, …), one end, in that order.
		var types []string
		resumed := 0
		for _, e := range entries[j.id] {
			types = append(types, string(e.EventType))
			if e.EventType == audit.SubagentResumed {
				resumed++
				if e.Attempt != resumed {
					t.Errorf("%s: resumed entry %d has attempt %d", j.id, resumed, e.Attempt)
				}
			}
		}
		end := "subagent:complete"
		if wantStatus != lifecycle.Success {
			end = "subagent:aborted"
		}
		want := append(append([]string{"subagent:start"}, repeat("subagent:resumed", wantAttempts)...), end)
		if fmt.Sprint(types) != fmt.Sprint(want) {
			t.Errorf("%s %s %s: lifecycle %v, want %v", j.id, j.role, j.kind, types, want)
		}
		counts[string(run.Status)]++
	}
	t.Logf("runs by status: %v", counts)
}

// job is one subagent of the crash test.
type job struct{ id, role, kind string }

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// kill ends the daemon with SIGKILL and waits for it.
func kill(t *testing.T, d *daemon) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGKILL)
	if code := d.exitCode(t); code != -1 {
		t.Fatalf("SIGKILL exit %d", code)
	}
}

// waitAll waits until ok holds for every job, as the daemon reports it.
func waitAll(t *testing.T, c *client.Client, jobs []job, ok func(client.Subagent) bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	pending := append([]job(nil), jobs...)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			sa, err := c.Subagent(context.Background(), pending[0].id)
			t.Fatalf("%d runs not there yet, e.g. %s: %+v %v", len(pending), pending[0].id, sa, err)
		}
		var rest []job
		for _, j := range pending {
			sa, err := c.Subagent(context.Background(), j.id)
			if err != nil || !ok(sa) {
				rest = append(rest, j)
			}
		}
		pending = rest
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

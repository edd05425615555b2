package subagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool/shell"
)

// Cancelling a subagent mid-stream closes its model connection: the fake
// server sees the client leave.
func TestCancelClosesModelStream(t *testing.T) {
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Text: "streaming forever", Hang: true})
	p, err := openai.New(openai.Config{BaseURL: fake.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, "turns: [{text: unused}]\n", func(o *subagent.Options) {
		cat := llm.NewCatalog(nil)
		cat.Add(p, map[string]string{"sonnet": "gpt-test"})
		o.Catalog = cat
	})
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "x"})
	select {
	case <-fake.Hanging(): // the stream is open and its first chunks sent
	case <-time.After(10 * time.Second):
		t.Fatal("the model stream never started")
	}
	start := time.Now()
	hd.Cancel()
	select {
	case <-fake.Disconnected():
	case <-time.After(5 * time.Second):
		t.Fatal("the model connection stayed open after cancel")
	}
	if r := wait(t, hd); r.Status != lifecycle.Cancelled || string(r.Output) != "null" {
		t.Fatalf("status %s output %s", r.Status, r.Output)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %s", d)
	}
}

// Cancelling a subagent kills the processes its tool started, children
// included.
func TestCancelKillsToolProcesses(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := "turns:\n  - tool_calls: [{name: run_bash, args: {command: \"sleep 300 & echo $! > " + pids + "; echo $$ >> " + pids + "; wait\"}}]\n"
	// Unconfined: the test reads the processes' pids, which in the
	// sandbox are its own namespace's (sandbox_test.go covers that case).
	sh := shell.New(shell.Config{Workspace: dir, Timeout: time.Minute, SandboxOff: true})
	h := newHarness(t, script, nil, sh.RunBash())
	hd := h.spawn(t, subagent.Config{Role: "code_reviewer", Task: "x"})
	var ids []int
	for deadline := time.Now().Add(10 * time.Second); len(ids) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the tool never started its processes")
		}
		b, _ := os.ReadFile(pids)
		ids = nil
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				ids = append(ids, n)
			}
		}
	}
	hd.Cancel()
	if r := wait(t, hd); r.Status != lifecycle.Cancelled {
		t.Fatalf("status %s", r.Status)
	}
	for _, pid := range ids {
		gone := false
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if err := syscall.Kill(pid, 0); err == syscall.ESRCH || zombie(pid) {
				gone = true
				break
			}
		}
		if !gone {
			t.Errorf("process %d still alive after cancel", pid)
		}
	}
	_ = context.Background
}

// zombie reports whether pid has exited but not been reaped (an orphan
// whose new parent, this machine's init, does not reap): it runs no more.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/tooltest"
)

func TestMain(m *testing.M) {
	if os.Getenv(avaChildEnv) != "" {
		runAsAva()
	}
	// Orphaned grandchildren are re-parented to this process, so the
	// tests can reap them and see them truly gone (not left as zombies
	// of an init that does not reap).
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "prctl(PR_SET_CHILD_SUBREAPER):", errno)
	}
	goleak.VerifyTestMain(m)
}

const prSetChildSubreaper = 36

func call(t *testing.T, ctx context.Context, tl tool.Tool, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(ctx, raw)
	if err != nil {
		t.Fatalf("%s(%s): Go error: %v", tl.Name(), raw, err)
	}
	return res
}

func TestRunBashSuccess(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi there\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "cat hello.txt; echo to-stderr >&2; pwd"})
	want := "hi there\nto-stderr\n" + realPath(t, dir) + "\n"
	if res.IsError || res.Output != want {
		t.Fatalf("got %+v, want %q", res, want)
	}
}

func TestRunBashStdinIsEmpty(t *testing.T) {
	tools := New(Config{Workspace: t.TempDir(), Timeout: 5 * time.Second})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "cat; echo end"})
	if res.IsError || res.Output != "end\n" {
		t.Fatalf("got %+v", res)
	}
}

func TestRunBashCallerWorkspace(t *testing.T) {
	cfgDir, callerDir := t.TempDir(), t.TempDir()
	tools := New(Config{Workspace: cfgDir})
	ctx := tool.WithCaller(t.Context(), tool.Caller{AgentID: "S-123456", Subagent: true, Workspace: callerDir})
	if res := call(t, ctx, tools.RunBash(), map[string]any{"command": "pwd"}); res.Output != realPath(t, callerDir)+"\n" {
		t.Fatalf("got %q, want the caller's workspace", res.Output)
	}
}

func TestRunBashBadArgs(t *testing.T) {
	tools := New(Config{Workspace: t.TempDir(), MaxTimeout: time.Minute})
	for _, args := range []string{
		`{}`,
		`{"command": ""}`,
		`{"command": "   "}`,
		`{"command": 5}`,
		`{"command": "true", "timeout_seconds": 0}`,
		`{"command": "true", "timeout_seconds": 61}`,
		`{"command": "true", "extra": 1}`,
		`not json`,
	} {
		res, err := tools.RunBash().Run(t.Context(), json.RawMessage(args))
		if err != nil || !res.IsError {
			t.Errorf("args %s: got %+v, %v; want an error result", args, res, err)
		}
	}
	if _, err := New(Config{}).RunBash().Run(t.Context(), json.RawMessage(`{"command":"true"}`)); err == nil {
		t.Error("no workspace: want a Go error")
	}
}

func TestRunBashNonZeroExit(t *testing.T) {
	tools := New(Config{Workspace: t.TempDir()})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "echo oops; exit 3"})
	if !res.IsError || !strings.HasPrefix(res.Output, "oops\n[exit code 3 after ") {
		t.Fatalf("got %+v", res)
	}
	res = call(t, t.Context(), tools.RunBash(), map[string]any{"command": "kill -KILL $$"})
	if !res.IsError || !strings.Contains(res.Output, `killed by signal "killed"`) {
		t.Fatalf("got %+v", res)
	}
}

func TestRunBashTimeout(t *testing.T) {
	tools := New(Config{Workspace: t.TempDir(), Timeout: 300 * time.Millisecond})
	start := time.Now()
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "echo started; trap '' TERM; sleep 30"})
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Fatalf("took %s", elapsed)
	}
	if !res.IsError || !strings.HasPrefix(res.Output, "started\n[command timed out after 300ms") {
		t.Fatalf("got %+v", res)
	}
	// timeout_seconds overrides the default.
	tools = New(Config{Workspace: t.TempDir(), Timeout: 100 * time.Millisecond})
	if res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "sleep 0.3; echo ok", "timeout_seconds": 5}); res.IsError {
		t.Fatalf("timeout_seconds ignored: %+v", res)
	}
}

func TestRunBashOutputCap(t *testing.T) {
	tools := New(Config{Workspace: t.TempDir(), MaxOutput: 1000})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "echo START; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	if !strings.HasPrefix(res.Output, "START\n") || !strings.HasSuffix(res.Output, "END\n") {
		t.Fatalf("head or tail lost: %q … %q", res.Output[:20], res.Output[len(res.Output)-20:])
	}
	if !strings.Contains(res.Output, "[output truncated: showed 1000 of 100011 bytes; 99011 bytes cut from the middle]") {
		t.Fatalf("no marker in %q", res.Output)
	}
	if len(res.Output) > 1200 {
		t.Fatalf("output %d bytes", len(res.Output))
	}
}

func TestRunBashScrubsSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-fake-openai")
	t.Setenv("ANTHROPIC_API_KEY", "sk-fake-anthropic")
	t.Setenv("AVA_TOKEN", "fake-ava-token")
	t.Setenv("MY_SERVICE_TOKEN", "fake-service-token")
	t.Setenv("my_db_password", "fake-password")
	t.Setenv("SOME_SECRET", "fake-secret")
	t.Setenv("DATABASE_URL", "postgres://u:fake-db-pass@db/x")
	t.Setenv("SECRET_KEY_BASE", "fake-key-base")
	t.Setenv("HARMLESS_SETTING", "visible")
	t.Setenv("LANG", "C.UTF-8")
	for _, off := range []bool{false, true} {
		tools := New(Config{Workspace: t.TempDir(), SandboxOff: off})
		res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "env"})
		if res.IsError {
			t.Fatal(res.Output)
		}
		// An allow-list: not even harmless-looking variables pass.
		if strings.Contains(res.Output, "fake") || strings.Contains(res.Output, "HARMLESS") {
			t.Fatalf("off=%v: a variable outside the allow-list reached the command:\n%s", off, res.Output)
		}
		if !strings.Contains(res.Output, "PATH=") || !strings.Contains(res.Output, "LANG=C.UTF-8") || !strings.Contains(res.Output, "TMPDIR=") {
			t.Fatalf("off=%v: allowed variables were dropped:\n%s", off, res.Output)
		}
	}
}

// TestRunBashCancelKillsProcessGroup cancels a command whose background
// grandchild holds the output pipe, and checks that Run returns promptly
// and every process is gone.
func TestRunBashCancelKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	tools := New(Config{Workspace: dir, Timeout: time.Minute, SandboxOff: true})
	cmd := fmt.Sprintf("sleep 300 & echo $! > %[1]s.tmp; (sleep 300; true) & echo $! >> %[1]s.tmp; echo $$ >> %[1]s.tmp; mv %[1]s.tmp %[1]s; sleep 300", pidFile)
	pids := cancelDuring(t, tools.RunBash(), map[string]any{"command": cmd}, pidFile, 3)
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

func TestRunBashTimeoutKillsBackgroundJobs(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	tools := New(Config{Workspace: dir, Timeout: 500 * time.Millisecond, SandboxOff: true})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "sleep 300 & echo $! > " + pidFile + "; sleep 300"})
	if !strings.Contains(res.Output, "timed out") {
		t.Fatalf("got %+v", res)
	}
	for _, pid := range readPids(t, pidFile) {
		waitGone(t, pid)
	}
}

func TestRunBashFinishedCommandLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	tools := New(Config{Workspace: dir, SandboxOff: true})
	start := time.Now()
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "sleep 300 & echo $! > " + pidFile + "; echo done"})
	if res.IsError || res.Output != "done\n" || time.Since(start) > 3*time.Second {
		t.Fatalf("got %+v after %s", res, time.Since(start))
	}
	for _, pid := range readPids(t, pidFile) {
		waitGone(t, pid)
	}
}

// TestRunBashEscapedHolderDoesNotStall runs a command that leaves a
// process in another session holding the output pipe.
func TestRunBashEscapedHolderDoesNotStall(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	tools := New(Config{Workspace: dir, SandboxOff: true})
	start := time.Now()
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "setsid sleep 30 & echo $! > " + pidFile + "; echo done"})
	elapsed := time.Since(start)
	for _, pid := range readPids(t, pidFile) {
		_ = syscall.Kill(pid, syscall.SIGKILL) // it escaped our group; clean up the test's own process
		waitGone(t, pid)
	}
	if res.IsError || res.Output != "done\n" || elapsed > 2*time.Second {
		t.Fatalf("got %+v after %s", res, elapsed)
	}
}

// cancelDuring runs tl in the background, waits for pidFile to list n
// pids, cancels, and checks the call returned promptly with a cancelled
// result. It returns the pids.
func cancelDuring(t *testing.T, tl tool.Tool, args any, pidFile string, n int) []int {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type ret struct {
		res tool.Result
		err error
	}
	done := make(chan ret, 1)
	raw, _ := json.Marshal(args)
	go func() {
		res, err := tl.Run(ctx, raw)
		done <- ret{res, err}
	}()
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) < n {
		if time.Now().After(deadline) {
			cancel()
			r := <-done
			t.Fatalf("pid file never filled (got %v); result %+v", pids, r.res)
		}
		time.Sleep(20 * time.Millisecond)
		pids = readPidsIfAny(pidFile)
	}
	cancelled := time.Now()
	cancel()
	select {
	case r := <-done:
		if r.err != nil || !r.res.IsError || !strings.Contains(r.res.Output, "cancelled") {
			t.Errorf("result %+v, %v; want a cancelled error result", r.res, r.err)
		}
		if d := time.Since(cancelled); d > 2*time.Second {
			t.Errorf("Run took %s to return after cancel", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel")
	}
	return pids
}

func readPids(t *testing.T, file string) []int {
	t.Helper()
	pids := readPidsIfAny(file)
	if len(pids) == 0 {
		t.Fatalf("no pids in %s", file)
	}
	return pids
}

func readPidsIfAny(file string) []int {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone waits until pid no longer exists (kill(pid, 0) gives ESRCH),
// reaping it if it was re-parented to this process.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d is still alive (state %s)", pid, procState(pid))
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func procState(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err.Error()
	}
	return string(data)
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAllRegister(t *testing.T) {
	tooltest.CheckSet(t, New(Config{}).All(), "python_exec", "run_bash")
}

package shell

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

func TestPythonExecSuccess(t *testing.T) {
	needPython(t)
	ws := t.TempDir()
	tools := New(Config{Workspace: ws})
	code := "import os, sys\nprint(sum(range(10)))\nprint(os.environ['AVA_WORKSPACE'])\nprint(sorted(os.listdir('.')))\nprint('warn', file=sys.stderr)\n"
	res := call(t, t.Context(), tools.PythonExec(), map[string]any{"code": code})
	abs, _ := filepath.Abs(ws)
	want := "45\n" + abs + "\n['main.py']\nwarn\n"
	if res.IsError || res.Output != want {
		t.Fatalf("got %+v, want %q", res, want)
	}
}

func TestPythonExecRemovesScratchFolder(t *testing.T) {
	needPython(t)
	tools := New(Config{Workspace: t.TempDir()})
	res := call(t, t.Context(), tools.PythonExec(), map[string]any{"code": "import os; print(os.getcwd())"})
	dir := strings.TrimSpace(res.Output)
	if res.IsError || !strings.Contains(dir, "ava-run-") {
		t.Fatalf("got %+v", res)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("scratch folder %s still there (%v)", dir, err)
	}
}

func TestPythonExecErrors(t *testing.T) {
	needPython(t)
	tools := New(Config{Workspace: t.TempDir()})
	res := call(t, t.Context(), tools.PythonExec(), map[string]any{"code": "print('before')\nraise ValueError('boom')"})
	if !res.IsError || !strings.Contains(res.Output, "before\n") || !strings.Contains(res.Output, "ValueError: boom") || !strings.Contains(res.Output, "[exit code 1 after") {
		t.Fatalf("exception: %+v", res)
	}
	res = call(t, t.Context(), tools.PythonExec(), map[string]any{"code": "import sys; sys.exit(4)"})
	if !res.IsError || !strings.Contains(res.Output, "[exit code 4 after") {
		t.Fatalf("sys.exit: %+v", res)
	}
	for _, args := range []string{`{}`, `{"code": ""}`, `{"code": "  \n"}`, `{"code": "x", "timeout_seconds": -1}`} {
		res, err := tools.PythonExec().Run(t.Context(), json.RawMessage(args))
		if err != nil || !res.IsError {
			t.Errorf("args %s: got %+v, %v; want an error result", args, res, err)
		}
	}
}

func TestPythonExecNoInterpreter(t *testing.T) {
	tools := New(Config{Workspace: t.TempDir(), Python: "no-such-python-3"})
	res := call(t, t.Context(), tools.PythonExec(), map[string]any{"code": "print(1)"})
	if !res.IsError || !strings.Contains(res.Output, `"no-such-python-3" is not on PATH`) {
		t.Fatalf("got %+v", res)
	}
}

func TestPythonExecTimeoutAndOutputCap(t *testing.T) {
	needPython(t)
	tools := New(Config{Workspace: t.TempDir(), Timeout: 700 * time.Millisecond, MaxOutput: 200})
	res := call(t, t.Context(), tools.PythonExec(), map[string]any{"code": "import time\nprint('x' * 5000)\ntime.sleep(30)"})
	if !res.IsError || !strings.Contains(res.Output, "[program timed out after 700ms") {
		t.Fatalf("timeout: %+v", res)
	}
	if !strings.Contains(res.Output, "[output truncated: showed 200 of 5001 bytes") {
		t.Fatalf("cap marker missing: %q", res.Output)
	}
}

func TestPythonExecScrubsSecrets(t *testing.T) {
	needPython(t)
	t.Setenv("OPENAI_API_KEY", "sk-fake-openai")
	t.Setenv("HARMLESS_SETTING", "visible")
	tools := New(Config{Workspace: t.TempDir()})
	res := call(t, t.Context(), tools.PythonExec(), map[string]any{"code": "import os\nprint(os.environ.get('OPENAI_API_KEY', 'absent'), os.environ.get('HARMLESS_SETTING'))"})
	if res.IsError || res.Output != "absent None\n" {
		t.Fatalf("got %+v", res)
	}
}

const memoryHog = "b = bytearray(400 * 1024 * 1024)\nprint('allocated', len(b))"

func TestPythonExecMemoryLimit(t *testing.T) {
	needPython(t)
	tools := New(Config{Workspace: t.TempDir(), MemoryLimitMB: 200})
	res := call(t, t.Context(), tools.PythonExec(), map[string]any{"code": memoryHog})
	if !res.IsError || !strings.Contains(res.Output, "MemoryError") {
		t.Fatalf("got %+v", res)
	}
	res = call(t, t.Context(), New(Config{Workspace: t.TempDir(), MemoryLimitMB: 1024}).PythonExec(), map[string]any{"code": memoryHog})
	if res.IsError {
		t.Fatalf("1 GiB limit refused 400 MB: %+v", res)
	}
}

// TestMemoryLimitWithoutPrlimit runs the bash ulimit fallback directly.
func TestMemoryLimitWithoutPrlimit(t *testing.T) {
	needPython(t)
	python, _ := exec.LookPath("python3")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(memoryHog), 0o600); err != nil {
		t.Fatal(err)
	}
	argv := limitedArgv("", 200<<20, python, "-I", "main.py")
	o, err := run(t.Context(), proc{argv: argv, dir: dir, env: os.Environ(), timeout: 30 * time.Second}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if o.exitCode == 0 || !strings.Contains(o.output, "MemoryError") {
		t.Fatalf("exit %d, output %q", o.exitCode, o.output)
	}
}

// TestPythonExecCancelKillsSubprocesses cancels a program that started a
// subprocess and checks both are gone.
func TestPythonExecCancelKillsSubprocesses(t *testing.T) {
	needPython(t)
	ws := t.TempDir()
	pidFile := filepath.Join(ws, "pids")
	code := fmt.Sprintf(`import os, subprocess, time
child = subprocess.Popen(["sleep", "300"])
with open(%q + ".tmp", "w") as f:
    f.write(f"{os.getpid()}\n{child.pid}\n")
os.rename(%q + ".tmp", %q)
time.sleep(300)
`, pidFile, pidFile, pidFile)
	// Unconfined, so the pids are this machine's (the sandbox's own
	// cancel test is in sandbox_test.go).
	tools := New(Config{Workspace: ws, Timeout: time.Minute, SandboxOff: true})
	pids := cancelDuring(t, tools.PythonExec(), map[string]any{"code": code}, pidFile, 2)
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

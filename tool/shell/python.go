package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/avaagent/ava/tool"
)

type pythonArgs struct {
	Code           string `json:"code" jsonschema:"a complete Python 3 program; print() what you want to see"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"seconds before the program is killed; default from the configuration"`
}

// PythonExec returns the python_exec tool.
//
// The memory limit is an address-space limit (RLIMIT_AS), set by the
// sandbox; unconfined (AVA_SANDBOX=off) it is set with util-linux prlimit
// when it is installed (prlimit --as=BYTES -- python3 -I -u main.py),
// else by bash (ulimit -v KB; exec python3 -I -u main.py).
func (t *Tools) PythonExec() tool.Tool {
	desc := fmt.Sprintf("Run a Python 3 program and return its combined stdout and stderr. The code is saved as main.py "+
		"in a fresh empty temporary folder, which is the working directory, and run in isolated, unbuffered mode (python3 -I -u: "+
		"no user site-packages, no PYTHON* variables). The workspace folder's path is in the AVA_WORKSPACE "+
		"environment variable. Limits: %s run time unless timeout_seconds says otherwise (at most %d), %d MB of "+
		"memory, %d bytes of output (start and end kept, the cut marked). An exception or non-zero exit is "+
		"reported as an error with the output. "+t.confinement(),
		t.cfg.Timeout, int(t.cfg.MaxTimeout.Seconds()), t.cfg.MemoryLimitMB, t.cfg.MaxOutput)
	s := inferSchema[pythonArgs]()
	prop(s, "code").MinLength = ptr(1)
	setRange(s, "timeout_seconds", 1, t.cfg.MaxTimeout.Seconds())
	return tool.NewFuncWithSchema("python_exec", desc, s, t.pythonExec)
}

func (t *Tools) pythonExec(ctx context.Context, a pythonArgs) (tool.Result, error) {
	if strings.TrimSpace(a.Code) == "" {
		return tool.Errorf("python_exec: code is empty; give a Python program"), nil
	}
	python, err := t.findPython()
	if err != nil {
		return tool.Errorf("python_exec: no Python interpreter: %q is not on PATH; python_exec cannot run here", t.cfg.Python), nil
	}
	if why := t.sandboxRefusal(); why != "" {
		return tool.Errorf("python_exec refused: %s", why), nil
	}
	workspace, err := t.workspaceFor(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	c, err := t.setup(ctx, workspace, t.cfg.MemoryLimitMB, "AVA_WORKSPACE="+workspace)
	if err != nil {
		return tool.Result{}, fmt.Errorf("python_exec: %w", err)
	}
	defer c.close()
	dir := c.scratch
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(a.Code), 0o600); err != nil {
		return tool.Result{}, fmt.Errorf("python_exec: write main.py: %w", err)
	}
	argv := []string{python, "-I", "-u", "main.py"}
	if c.box == nil {
		// Unconfined, the memory limit needs a wrapper; the sandbox sets it itself.
		argv = t.pythonArgv(python)
	}
	timeout := t.timeout(a.TimeoutSeconds)
	o, err := run(ctx, proc{
		argv:    argv,
		dir:     dir,
		env:     c.env,
		timeout: timeout,
		box:     c.box,
	}, t.cfg.MaxOutput)
	if err != nil {
		return tool.Result{}, fmt.Errorf("python_exec: %w", err)
	}
	return report("program", o, timeout), nil
}

// pythonArgv is the command line that runs main.py under the memory
// limit: through prlimit if installed, else through bash's ulimit.
func (t *Tools) pythonArgv(python string) []string {
	prlimit, _ := exec.LookPath("prlimit")
	return limitedArgv(prlimit, int64(t.cfg.MemoryLimitMB)<<20, python, "-I", "-u", "main.py")
}

// limitedArgv is the command line that runs argv with its address space
// limited to limit bytes: by prlimit when its path is given, else by bash.
func limitedArgv(prlimit string, limit int64, argv ...string) []string {
	if prlimit != "" {
		return append([]string{prlimit, "--as=" + strconv.FormatInt(limit, 10), "--"}, argv...)
	}
	return append([]string{"bash", "-c", `ulimit -v "$1" && shift && exec "$@"`, "bash", strconv.FormatInt(limit>>10, 10)}, argv...)
}

// findPython finds the interpreter. Sandboxed, an interpreter in the
// system folders comes first: one under the home folder (pyenv, a
// virtualenv) is invisible in the sandbox.
func (t *Tools) findPython() (string, error) {
	if !t.cfg.SandboxOff && !strings.Contains(t.cfg.Python, "/") {
		for _, dir := range filepath.SplitList(defaultPath) {
			p := filepath.Join(dir, t.cfg.Python)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return exec.LookPath(t.cfg.Python)
}

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
// The memory limit is an address-space limit (RLIMIT_AS) set with
// util-linux prlimit when it is installed (prlimit --as=BYTES -- python3
// -I -u main.py), else by bash (ulimit -v KB; exec python3 -I -u main.py).
func (t *Tools) PythonExec() tool.Tool {
	desc := fmt.Sprintf("Run a Python 3 program and return its combined stdout and stderr. The code is saved as main.py "+
		"in a fresh empty temporary folder, which is the working directory, and run in isolated, unbuffered mode (python3 -I -u: "+
		"no user site-packages, no PYTHON* variables). The workspace folder's path is in the AVA_WORKSPACE "+
		"environment variable. Limits: %s run time unless timeout_seconds says otherwise (at most %d), %d MB of "+
		"memory, %d bytes of output (start and end kept, the cut marked). An exception or non-zero exit is "+
		"reported as an error with the output. API keys and other secrets are not in the environment.",
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
	python, err := exec.LookPath(t.cfg.Python)
	if err != nil {
		return tool.Errorf("python_exec: no Python interpreter: %q is not on PATH; python_exec cannot run here", t.cfg.Python), nil
	}
	workspace, err := t.workspaceFor(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	dir, err := os.MkdirTemp("", "ava-python-")
	if err != nil {
		return tool.Result{}, fmt.Errorf("python_exec: scratch folder: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(a.Code), 0o600); err != nil {
		return tool.Result{}, fmt.Errorf("python_exec: write main.py: %w", err)
	}
	timeout := t.timeout(a.TimeoutSeconds)
	o, err := run(ctx, proc{
		argv:    t.pythonArgv(python),
		dir:     dir,
		env:     append(ScrubEnv(os.Environ()), "AVA_WORKSPACE="+workspace),
		timeout: timeout,
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

package shell

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/avaagent/ava/tool"
)

type bashArgs struct {
	Command        string `json:"command" jsonschema:"the bash command line to run, e.g. go test ./... or ls -la src; pipes, && and redirections work"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"seconds before the command is killed; default from the configuration"`
}

// RunBash returns the run_bash tool.
func (t *Tools) RunBash() tool.Tool {
	desc := fmt.Sprintf("Run a bash command in the workspace folder (bash -c) and return its combined stdout and stderr. "+
		"A non-zero exit is reported as an error with the output and exit code. Stdin is empty, so interactive "+
		"commands fail instead of waiting; pass flags like -y. The command is killed after %s unless "+
		"timeout_seconds says otherwise (at most %d), and anything it started in the background is killed "+
		"when it returns, so start and use a server in the same command. Output over %d bytes keeps its "+
		"start and end and marks the cut. "+t.confinement(),
		t.cfg.Timeout, int(t.cfg.MaxTimeout.Seconds()), t.cfg.MaxOutput)
	s := inferSchema[bashArgs]()
	prop(s, "command").MinLength = ptr(1)
	setRange(s, "timeout_seconds", 1, t.cfg.MaxTimeout.Seconds())
	return tool.NewFuncWithSchema("run_bash", desc, s, t.runBash)
}

func (t *Tools) runBash(ctx context.Context, a bashArgs) (tool.Result, error) {
	if strings.TrimSpace(a.Command) == "" {
		return tool.Errorf("run_bash: command is empty; give a bash command line"), nil
	}
	if strings.ContainsRune(a.Command, 0) {
		return tool.Errorf("run_bash: command contains a NUL byte"), nil
	}
	if why := t.sandboxRefusal(); why != "" {
		return tool.Errorf("run_bash refused: %s", why), nil
	}
	dir, err := t.workspaceFor(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	c, err := t.setup(ctx, dir, t.cfg.BashMemoryLimitMB)
	if err != nil {
		return tool.Result{}, fmt.Errorf("run_bash: %w", err)
	}
	defer c.close()
	timeout := t.timeout(a.TimeoutSeconds)
	o, err := run(ctx, proc{
		argv:    []string{"bash", "-c", a.Command},
		dir:     dir,
		env:     c.env,
		timeout: timeout,
		box:     c.box,
	}, t.cfg.MaxOutput)
	if err != nil {
		return tool.Result{}, fmt.Errorf("run_bash: %w", err)
	}
	return report("command", o, timeout), nil
}

// report turns an outcome into the result the model reads.
func report(what string, o outcome, timeout time.Duration) tool.Result {
	out := o.output
	if out == "" {
		out = "(no output)"
	} else if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if o.repos != "" {
		out += o.repos + "\n"
	}
	took := o.elapsed.Round(10 * time.Millisecond)
	switch {
	case o.timedOut:
		return tool.Errorf("%s[%s timed out after %s; it and every process it started were killed]", out, what, timeout)
	case o.cancelled:
		return tool.Errorf("%s[%s cancelled after %s; it and every process it started were killed]", out, what, took)
	case o.signal != "":
		return tool.Errorf("%s[%s killed by signal %q after %s]", out, what, o.signal, took)
	case o.exitCode != 0:
		return tool.Errorf("%s[exit code %d after %s]", out, o.exitCode, took)
	}
	return tool.Result{Output: out}
}

// inferSchema infers the argument schema of T; it panics on a type with
// no schema, a programming error any test finds.
func inferSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("shell: infer schema: %v", err))
	}
	return s
}

func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties[name]
	if !ok {
		panic(fmt.Sprintf("shell: schema has no property %q", name))
	}
	return p
}

func setRange(s *jsonschema.Schema, name string, lo, hi float64) {
	p := prop(s, name)
	p.Minimum, p.Maximum = &lo, &hi
}

func ptr[T any](v T) *T { return &v }

// confinement tells the model what a command can reach.
func (t *Tools) confinement() string {
	if t.cfg.SandboxOff {
		return "The sandbox is OFF: commands run with the user's full access. Secrets are not in the environment."
	}
	net := "There is no network."
	if t.cfg.Network {
		net = "The network is reachable only through the HTTP(S) proxy in HTTP_PROXY/HTTPS_PROXY, to public hosts."
	}
	ws := "read and write"
	if t.cfg.WorkspaceReadOnly {
		ws = "only read"
	}
	return fmt.Sprintf("Commands run in a sandbox: they can %s the workspace and use HOME/TMPDIR (a fresh scratch folder, deleted after the call) and /tmp; "+
		"system folders are read-only; nothing else of the machine is visible. %s At most %d processes. "+
		"Secrets are not in the environment.", ws, net, t.cfg.Processes)
}

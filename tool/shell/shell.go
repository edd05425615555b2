// Package shell holds Ava's process tools: run_bash runs a shell command
// in the workspace and python_exec runs a Python program in a scratch
// folder.
//
// By default every command runs in the process sandbox (package
// sandbox): its own user, PID, mount and network namespaces, Landlock
// (system folders read-only, the workspace, a per-call scratch folder),
// a seccomp filter and rlimits; no network, or with Config.Network only
// through the egress proxy. Where the sandbox cannot be set up, the tools
// refuse to run, naming what is missing, unless Config.SandboxOff
// (AVA_SANDBOX=off) lets them run unconfined.
//
// Every process runs in its own process group with stdin on /dev/null,
// combined stdout and stderr capped (head and tail kept, the cut marked),
// and an environment built from an allow-list (see CommandEnv), never
// Ava's own. When the call times out or its context is cancelled, the
// whole group is sent SIGTERM and, after a short grace, SIGKILL, so
// background jobs and grandchildren die with it; when the command ends by
// itself, whatever it left running is killed too. In the sandbox that
// includes processes that left the group (setsid): they die with the PID
// namespace. Unconfined, such a process escapes the kill, but cannot
// stall the call: the output pipe is abandoned shortly after the command
// ends.
//
// A command that fails (non-zero exit, timeout) is an error Result with
// its output; a Go error means the tool could not run anything at all.
package shell

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool"
)

// Defaults for the zero fields of Config.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultMaxTimeout    = 10 * time.Minute
	DefaultMaxOutput     = 30_000
	DefaultPython        = "python3"
	DefaultMemoryLimitMB = 1024
	// DefaultBashMemoryLimitMB is run_bash's address-space cap: larger
	// than python_exec's, as compilers and runtimes reserve much virtual
	// memory they never touch.
	DefaultBashMemoryLimitMB = 8192
	DefaultProcesses         = 256
	DefaultCPUSeconds        = 600
)

// Config tunes the process tools. Zero fields take the defaults above.
type Config struct {
	// Workspace is the folder commands run in when the caller in the
	// context names none.
	Workspace string
	// Timeout bounds a call that asks for no timeout of its own.
	Timeout time.Duration
	// MaxTimeout is the longest timeout_seconds a call may ask for.
	MaxTimeout time.Duration
	// MaxOutput caps the bytes of output returned.
	MaxOutput int
	// Python is the interpreter python_exec runs, looked up on PATH.
	Python string
	// MemoryLimitMB caps python_exec's address space (RLIMIT_AS).
	MemoryLimitMB int
	// BashMemoryLimitMB caps the address space of each process run_bash
	// starts (RLIMIT_AS; sandboxed calls only).
	BashMemoryLimitMB int
	// Processes caps the processes and threads of one sandboxed call.
	Processes int
	// CPUSeconds caps each sandboxed process's CPU time.
	CPUSeconds int

	// SandboxOff runs commands unconfined (AVA_SANDBOX=off).
	SandboxOff bool
	// Network lets sandboxed commands reach the network, only through
	// an egress proxy that applies EgressGuard and EgressAllow.
	Network bool
	// EgressGuard refuses the addresses the egress proxy may not dial:
	// the web tools' public-address guard. Required with Network.
	EgressGuard func(netip.Addr) error
	// EgressAllow is the egress proxy's domain allow-list
	// (AVA_EGRESS_ALLOW); empty allows every public host.
	EgressAllow []string
	// WorkspaceReadOnly makes the workspace read-only to commands.
	WorkspaceReadOnly bool
	// Hide lists folders commands never see, such as the data root.
	// Ava's home folder is always hidden, unless it is the workspace.
	Hide []string
	// Probe reports the sandbox's state; nil means sandbox.Probe.
	Probe func() sandbox.Status
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	c.MaxTimeout = max(c.MaxTimeout, c.Timeout)
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.MemoryLimitMB <= 0 {
		c.MemoryLimitMB = DefaultMemoryLimitMB
	}
	if c.BashMemoryLimitMB <= 0 {
		c.BashMemoryLimitMB = DefaultBashMemoryLimitMB
	}
	if c.Processes <= 0 {
		c.Processes = DefaultProcesses
	}
	if c.CPUSeconds <= 0 {
		c.CPUSeconds = DefaultCPUSeconds
	}
	if c.Probe == nil {
		c.Probe = sandbox.Probe
	}
	return c
}

// Tools builds the process tools over one Config.
type Tools struct {
	cfg Config
}

// New returns the process tools for cfg.
func New(cfg Config) *Tools {
	return &Tools{cfg: cfg.withDefaults()}
}

// All returns every process tool.
func (t *Tools) All() []tool.Tool {
	return []tool.Tool{t.RunBash(), t.PythonExec()}
}

// workspaceFor finds the folder of this call. A missing or unusable
// workspace is a setup fault, so it is a Go error.
func (t *Tools) workspaceFor(ctx context.Context) (string, error) {
	dir := t.cfg.Workspace
	if c, ok := tool.CallerFrom(ctx); ok && c.Workspace != "" {
		dir = c.Workspace
	}
	if dir == "" {
		return "", errors.New("shell: no workspace folder configured")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("shell: workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("shell: workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("shell: workspace %s is not a directory", dir)
	}
	return abs, nil
}

// timeout turns a call's timeout_seconds (0: none asked) into a duration.
func (t *Tools) timeout(seconds int) time.Duration {
	if seconds <= 0 {
		return t.cfg.Timeout
	}
	return min(time.Duration(seconds)*time.Second, t.cfg.MaxTimeout)
}

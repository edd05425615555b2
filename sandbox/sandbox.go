package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// InitArg0 is argv[0] of a re-executed Ava process that must act as the
// sandbox helper instead of running main.
const InitArg0 = "ava-sandbox-init"

// ProxyPort is the loopback port, inside a sandbox with network, where
// the helper relays connections to the egress proxy.
const ProxyPort = 3128

// EnvSandbox names the setting that turns the sandbox off ("off"), for
// messages; package config reads it (and config.yaml's sandbox key).
const EnvSandbox = "AVA_SANDBOX"

// ErrUnavailable is wrapped by the error of a sandbox that cannot be set
// up on this machine.
var ErrUnavailable = errors.New("the process sandbox is not available")

// Limits bound the resources of one sandboxed command and everything it
// starts. Zero fields take DefaultLimits' values.
type Limits struct {
	// Processes caps the tasks (processes and threads) in the sandbox
	// (RLIMIT_NPROC, counted in the sandbox's own user namespace).
	Processes uint64
	// MemoryBytes caps each process's address space (RLIMIT_AS).
	MemoryBytes uint64
	// CPUSeconds caps each process's CPU time (RLIMIT_CPU).
	CPUSeconds uint64
	// FileBytes caps the size of a file a process writes (RLIMIT_FSIZE).
	FileBytes uint64
}

// DefaultLimits are the limits of a Spec that sets none.
var DefaultLimits = Limits{Processes: 256, MemoryBytes: 2 << 30, CPUSeconds: 600, FileBytes: 1 << 30}

// maxTmpfsBytes caps the size of a sandbox's private temporary folders.
const maxTmpfsBytes = 1 << 30

// tmpfsBytes is the size of the one tmpfs behind a sandbox's /tmp,
// /var/tmp, /run and /dev/shm together. What a command writes there is
// memory that RLIMIT_AS does not count, so it is taken from the memory
// limit: half of MemoryBytes, at most maxTmpfsBytes.
func (l Limits) tmpfsBytes() uint64 { return min(l.MemoryBytes/2, maxTmpfsBytes) }

func (l Limits) withDefaults() Limits {
	if l.Processes == 0 {
		l.Processes = DefaultLimits.Processes
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = DefaultLimits.CPUSeconds
	}
	if l.FileBytes == 0 {
		l.FileBytes = DefaultLimits.FileBytes
	}
	return l
}

// Spec is one command to run in a sandbox.
type Spec struct {
	// Argv is the command; Argv[0] is looked up on the PATH of Env.
	Argv []string
	// Env is the command's whole environment: nothing of Ava's is added.
	Env []string
	// Dir is the working directory; it must be the workspace, the
	// scratch folder or beneath one of them.
	Dir string
	// Workspace is the folder the command may read, and write unless
	// WorkspaceReadOnly.
	Workspace         string
	WorkspaceReadOnly bool
	// Scratch is the per-run folder the command may read and write
	// (its HOME and TMPDIR). It must exist and be empty of secrets.
	Scratch string
	// Hide lists more folders to cover with an empty tmpfs (the data
	// root, Ava's HOME); they are never readable in any case.
	Hide []string
	// ProxySocket is the Unix socket of the egress proxy; empty means no
	// network at all. It must be inside Scratch.
	ProxySocket string
	Limits      Limits
	// Mounts are more existing folders the command sees at their own
	// paths (a long-running server's install folder or cache); Dir may
	// be one of them or beneath one. A hidden folder inside one stays
	// hidden.
	Mounts []Mount
}

// Mount is one more folder visible in the sandbox: read and execute, or
// with Write read and write too.
type Mount struct {
	Path  string
	Write bool
}

// Exit is how a sandboxed command ended.
type Exit struct {
	// Code is the exit code, or -1 when a signal killed it.
	Code int
	// Signal names the signal that killed it, if one did.
	Signal string
}

// Status says which protections this machine gives the process tools.
type Status struct {
	// Off is true when the configuration turns the sandbox off
	// (AVA_SANDBOX=off): commands run unconfined. Probe never sets it;
	// the caller that holds the configuration does.
	Off bool
	// Ready is true when every protection is in place.
	Ready bool
	// Active lists the protections in place.
	Active []string
	// Missing lists what could not be set up, and why.
	Missing []string
}

// Summary is one line for startup and `ava roles`.
func (s Status) Summary() string {
	switch {
	case s.Off:
		return "process sandbox OFF (AVA_SANDBOX=off): run_bash and python_exec run unconfined, with your user's full access"
	case s.Ready:
		return "process sandbox: " + strings.Join(s.Active, ", ")
	}
	return fmt.Sprintf("process sandbox UNAVAILABLE (missing: %s): run_bash and python_exec refuse to run; set %s=off to run them unconfined",
		strings.Join(s.Missing, "; "), EnvSandbox)
}

// Err is nil when commands may run: the sandbox is ready or explicitly
// off. Otherwise it wraps ErrUnavailable and names what is missing.
func (s Status) Err() error {
	if s.Off || s.Ready {
		return nil
	}
	return fmt.Errorf("%w (missing: %s); set %s=off to run process tools unconfined", ErrUnavailable, strings.Join(s.Missing, "; "), EnvSandbox)
}

// SetupError is a sandbox the helper could not set up; nothing ran.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return "sandbox setup failed: " + e.Msg }

// Unwrap makes a SetupError an ErrUnavailable.
func (e *SetupError) Unwrap() error { return ErrUnavailable }

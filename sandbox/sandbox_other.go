//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
)

// Probe reports that this operating system has no process sandbox.
func Probe() Status {
	return Status{Missing: []string{fmt.Sprintf("Linux (the sandbox uses Linux namespaces, Landlock and seccomp; this is %s)", runtime.GOOS)}}
}

// HardenSelf does nothing outside Linux.
func HardenSelf() error { return nil }

// Cmd is a sandboxed command; it cannot be made outside Linux.
type Cmd struct{ *exec.Cmd }

// Command fails outside Linux.
func Command(Spec) (*Cmd, error) { return nil, fmt.Errorf("%w on %s", ErrUnavailable, runtime.GOOS) }

// Exit fails outside Linux.
func (c *Cmd) Exit() (Exit, error) { return Exit{}, errors.New("sandbox: not on Linux") }

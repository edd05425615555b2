//go:build !linux

package mcpclient

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts a stdio server in a process group of its own,
// so that stopping it reaches what it started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills every process left in the group pgid.
func killProcessGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

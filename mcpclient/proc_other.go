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

// killProcessGroup sends sig to every process left in the group pgid.
func killProcessGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }

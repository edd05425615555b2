package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	probeOnce   sync.Once
	probeStatus Status
)

// Probe reports which protections this machine gives the process tools.
// The first call sets a real sandbox up once (about as long as one
// command's start) and caches the answer. Whether the configuration
// turns the sandbox off is the caller's to say (Status.Off).
func Probe() Status {
	probeOnce.Do(func() { probeStatus = probe() })
	return probeStatus
}

func probe() Status {
	var st Status
	if v := landlockABI(); v < 1 {
		st.Missing = append(st.Missing, "Landlock (kernel without it, or not enabled in the lsm= boot list)")
	}
	if auditArch == 0 {
		st.Missing = append(st.Missing, "a seccomp filter for this architecture")
	}
	active, err := probeHelper()
	st.Active = append(active, processCap())
	if err != nil {
		st.Missing = append(st.Missing, explainProbe(err))
	}
	st.Ready = len(st.Missing) == 0
	return st
}

// probeHelper sets a sandbox up without running anything in it.
func probeHelper() ([]string, error) {
	dir, err := os.MkdirTemp("", "ava-sandbox-probe-")
	if err != nil {
		return nil, fmt.Errorf("scratch folder: %w", err)
	}
	defer os.RemoveAll(dir)
	c, err := newCmd(helperSpec{Spec: Spec{Workspace: dir, Scratch: dir, Dir: dir}, Probe: true})
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	werr := c.Wait()
	st, err := c.status()
	if err != nil {
		return nil, errors.Join(err, werr)
	}
	return st.Active, nil
}

// explainProbe names what is missing from the probe's failure.
func explainProbe(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "start helper") && (strings.Contains(msg, "operation not permitted") || strings.Contains(msg, "no space left")):
		return "unprivileged user namespaces (disabled: kernel.unprivileged_userns_clone, user.max_user_namespaces or an AppArmor/SELinux policy): " + msg
	}
	return msg
}

// HardenSelf marks Ava's process non-dumpable, so that no process of the
// same user without CAP_SYS_PTRACE (a command run unsandboxed by a user
// other than root included) can read its memory or environment through
// /proc/<pid>/mem or /proc/<pid>/environ, or attach a debugger; and it
// marks every descriptor Ava inherited close-on-exec, so that none
// reaches a process Ava starts. Call it once at start.
func HardenSelf() error {
	var errs []error
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		errs = append(errs, fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err))
	}
	if err := closeOnExecAbove2(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// closeOnExecAbove2 marks every descriptor but the standard streams
// close-on-exec: Ava's own already are, so this reaches only those Ava
// inherited from its parent. Without close_range's flag (Linux < 5.11)
// it marks each descriptor /proc lists.
func closeOnExecAbove2() error {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// unixAccessW reports whether this process may write in dir.
func unixAccessW(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

// processCap says what caps a sandbox's number of processes.
func processCap() string {
	if cgroupParent() != "" {
		return "process count capped by a cgroup (pids)"
	}
	if os.Getuid() == 0 {
		return "NO process-count cap (Ava runs as root, where RLIMIT_NPROC does not apply, and no cgroup is writable)"
	}
	return "process count capped by RLIMIT_NPROC"
}

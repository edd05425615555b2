package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns a process started by Command into the sandbox helper. It is
// an init function, not a call in main, because every binary that links
// the process tools must be able to serve as its own helper: ava, and
// every test binary. It does nothing in any other process.
func init() {
	if len(os.Args) == 0 || os.Args[0] != InitArg0 || len(os.Environ()) != 1 || os.Environ()[0] != helperEnv {
		return
	}
	// Thread-scoped settings (the capability bounding set) must be made
	// on the thread that forks the command.
	runtime.LockOSThread()
	os.Exit(helperMain())
}

// helperMain sets the sandbox up, runs the command as its only child,
// reaps every orphan until the command ends, and reports.
func helperMain() int {
	status := os.NewFile(statusFd, "status")
	report := func(st helperStatus) {
		data, _ := json.Marshal(st)
		_, _ = status.Write(data)
	}
	quietRuntime()
	if err := closeInherited(); err != nil {
		report(helperStatus{Error: err.Error()})
		return 125
	}
	hs, err := readSpec(os.NewFile(specFd, "spec"))
	if err != nil {
		report(helperStatus{Error: err.Error()})
		return 125
	}
	// Marked non-dumpable, the helper cannot be read or traced by the
	// command, which runs as the same user.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		report(helperStatus{Error: "prctl(PR_SET_DUMPABLE): " + err.Error()})
		return 125
	}
	active, err := setup(hs.Spec, hs.Protect)
	if err != nil {
		report(helperStatus{Error: err.Error(), Active: active})
		return 125
	}
	if hs.Probe {
		report(helperStatus{Active: active})
		return 0
	}
	pid, err := startCommand(hs.Spec)
	if err != nil {
		report(helperStatus{Error: err.Error()})
		return 125
	}
	silenceStdio()
	exit := reapUntil(pid)
	// Whatever the command left running dies now; the kernel would kill
	// it anyway when this process, the namespace's init, exits.
	_ = syscall.Kill(-1, syscall.SIGKILL)
	report(helperStatus{Exit: exit})
	return 0
}

// dumpSignals are the signals on which the Go runtime prints every
// goroutine's stack and exits. The command may send any signal to the
// helper, its namespace's first process.
var dumpSignals = []os.Signal{syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGILL, syscall.SIGTRAP,
	syscall.SIGSYS, syscall.SIGSTKFLT, syscall.SIGBUS, syscall.SIGSEGV, syscall.SIGFPE}

// quietRuntime makes the helper deaf to the signals that would make the
// Go runtime dump its state into the command's output, and keeps any
// crash report to its first line. The signals are caught into a channel
// nobody reads (a full channel drops them), not ignored: an ignored
// signal would stay ignored in the command, across fork and exec, while
// a caught one is reset to its default there.
func quietRuntime() {
	signal.Notify(make(chan os.Signal, 1), dumpSignals...)
	debug.SetTraceback("none")
}

// closeInherited closes every descriptor the helper inherited but its
// standard streams and its spec and status pipes, and marks those two
// close-on-exec, so that the command gets only the descriptors
// startCommand hands it. Ava's own descriptors are close-on-exec, but one
// Ava inherited without the flag from its parent (`ava 8<secret`) would
// pass on. Every descriptor the Go runtime opened since exec has the
// flag: one without it was inherited.
func closeInherited() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list inherited descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if fd == specFd || fd == statusFd {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
				return fmt.Errorf("mark descriptor %d close-on-exec: %w", fd, err)
			}
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
	return nil
}

// silenceStdio points the helper's own standard streams at /dev/null
// once the command holds them: nothing the helper might print (a crash)
// reaches the command's output.
func silenceStdio() {
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(null)
	for fd := 0; fd <= 2; fd++ {
		_ = unix.Dup3(null, fd, 0)
	}
}

func readSpec(f *os.File) (helperSpec, error) {
	defer f.Close()
	var hs helperSpec
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return hs, fmt.Errorf("read spec: %w", err)
	}
	if err := json.Unmarshal(data, &hs); err != nil {
		return hs, fmt.Errorf("decode spec: %w", err)
	}
	return hs, nil
}

// setup applies every protection, in an order where each step still has
// what it needs, and returns the ones in place.
func setup(s Spec, protect []string) ([]string, error) {
	active := []string{"namespaces (user, pid, mount, net, ipc, uts)"}
	m, err := setupMounts(s, protect)
	if err != nil {
		return active, fmt.Errorf("mounts: %w", err)
	}
	active = append(active, "private /tmp, /run, $HOME and data root", "fresh /proc", "only descriptors 0-2")
	if !s.WorkspaceReadOnly {
		active = append(active, "workspace control files (.ava, .git, …) and every repository's .git read-only")
	}
	if err := setupNetwork(s); err != nil {
		return active, fmt.Errorf("network: %w", err)
	}
	if s.ProxySocket != "" {
		active = append(active, "network only through the egress proxy")
	} else {
		active = append(active, "no network (a role may allow it through the egress proxy)")
	}
	if err := dropCapabilities(); err != nil {
		return active, fmt.Errorf("drop capabilities: %w", err)
	}
	abi, err := applyLandlock(s, m)
	if err != nil {
		return active, fmt.Errorf("landlock: %w", err)
	}
	active = append(active, "landlock ABI "+strconv.Itoa(abi))
	if err := applySeccomp(); err != nil {
		return active, fmt.Errorf("seccomp: %w", err)
	}
	active = append(active, "seccomp filter")
	active = append(active, "rlimits on processes, memory (address space), CPU time and file size")
	return active, nil
}

// gateScript holds the command until the helper has set its rlimits:
// it waits for a line on fd 3, closes it, and executes its arguments.
const gateScript = `read _ <&3 || exit 126; exec 3<&-; exec "$@"`

// startCommand forks the command on this (locked) thread, so it inherits
// the thread's Landlock domain, seccomp filter and dropped capabilities,
// and relays termination signals to every process of the namespace. The
// command starts as /bin/sh running gateScript, held until the helper
// has set its rlimits with prlimit: limits set on the helper itself
// would bind the helper too.
func startCommand(s Spec) (int, error) {
	path, err := lookPath(s.Argv[0], s.Env)
	if err != nil {
		return 0, err
	}
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("gate pipe: %w", err)
	}
	defer gateR.Close()
	defer gateW.Close()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(-1, sig.(syscall.Signal))
		}
	}()
	argv := append([]string{"sh", "-c", gateScript, "sh", path}, s.Argv[1:]...)
	pid, err := syscall.ForkExec("/bin/sh", argv, &syscall.ProcAttr{
		Dir:   s.Dir,
		Env:   s.Env,
		Files: []uintptr{0, 1, 2, gateR.Fd()},
	})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	if err := applyLimits(pid, s.Limits.withDefaults()); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return 0, fmt.Errorf("rlimits: %w", err)
	}
	if _, err := gateW.Write([]byte("go\n")); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return 0, fmt.Errorf("release %s: %w", s.Argv[0], err)
	}
	return pid, nil
}

// lookPath finds argv0 on the PATH of the command's environment.
func lookPath(argv0 string, env []string) (string, error) {
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			os.Setenv("PATH", kv[5:])
		}
	}
	path, err := exec.LookPath(argv0)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", argv0, err)
	}
	return path, nil
}

// reapUntil reaps children (the command and every orphan re-parented to
// this init) until the command itself has ended, and returns its end.
func reapUntil(pid int) Exit {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return Exit{Code: -1, Signal: "lost: " + err.Error()}
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return Exit{Code: -1, Signal: ws.Signal().String()}
		}
		return Exit{Code: ws.ExitStatus()}
	}
}

// setupNetwork brings up the namespace's own loopback device (so a
// command can serve and use a local server) and, with a proxy, relays
// 127.0.0.1:ProxyPort to it.
func setupNetwork(s Spec) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	if s.ProxySocket == "" {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ProxyPort))
	if err != nil {
		return fmt.Errorf("proxy relay: %w", err)
	}
	// The relay lives as long as this process, the namespace's init.
	go relay(ln, s.ProxySocket)
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("ifreq: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

func relay(ln net.Listener, socket string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", socket)
			if err != nil {
				return
			}
			defer up.Close()
			splice(c, up)
		}()
	}
}

// dropCapabilities empties this thread's bounding, inheritable and
// ambient sets, so the command (forked from this thread) has no
// capability even as root of its namespace.
func dropCapabilities() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // beyond the kernel's last capability
		}
		if err != nil {
			return fmt.Errorf("PR_CAPBSET_DROP %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// applyLimits sets the rlimits, soft and hard, of the held command.
func applyLimits(pid int, l Limits) error {
	for _, r := range []struct {
		res int
		val uint64
	}{
		{unix.RLIMIT_NPROC, l.Processes},
		{unix.RLIMIT_AS, l.MemoryBytes},
		{unix.RLIMIT_CPU, l.CPUSeconds},
		{unix.RLIMIT_FSIZE, l.FileBytes},
		{unix.RLIMIT_CORE, 0},
	} {
		rl := unix.Rlimit{Cur: r.val, Max: r.val}
		if err := unix.Prlimit(pid, r.res, &rl, nil); err != nil {
			return fmt.Errorf("prlimit %d: %w", r.res, err)
		}
	}
	return nil
}

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperEnv marks the helper's environment, with InitArg0 as argv[0]; the
// helper's environment holds nothing else.
const helperEnv = "AVA_SANDBOX_HELPER=1"

// Fds of the helper: its spec (read) and its status (write).
const (
	specFd   = 3
	statusFd = 4
)

// nsFlags are the namespaces every sandbox gets.
const nsFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// helperSpec is what Ava sends the helper on specFd.
type helperSpec struct {
	Spec
	// Probe asks the helper to set everything up, report, and run nothing.
	Probe bool
	// Protect are the workspace's repository markers (relative paths)
	// the helper mounts read-only over themselves (see repos_linux.go).
	Protect []string `json:"protect,omitempty"`
}

// helperStatus is what the helper sends back on statusFd.
type helperStatus struct {
	Exit   Exit     `json:"exit"`
	Active []string `json:"active,omitempty"`
	// Error is a setup failure: nothing ran.
	Error string `json:"error,omitempty"`
}

// Cmd is a command prepared to run in a sandbox. Set Stdin, Stdout and
// Stderr on its embedded exec.Cmd (the helper's, passed on to the
// command), then Start, Wait, and read Exit.
type Cmd struct {
	*exec.Cmd
	spec         helperSpec
	specW        *os.File
	statusR      *os.File
	childEnds    []*os.File
	statusCached *helperStatus
	cgroup       *cgroup
	// repos guards a writable workspace's repositories; nil otherwise.
	repos *repoGuard
}

// Command prepares spec to run in a sandbox. The helper runs in its own
// process group (its pid is the group), so signalling the group reaches it.
func Command(spec Spec) (*Cmd, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty command")
	}
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	c, err := newCmd(helperSpec{Spec: spec})
	if err != nil {
		return nil, err
	}
	c.repos = newRepoGuard(spec)
	return c, nil
}

func checkSpec(s Spec) error {
	for name, p := range map[string]string{"workspace": s.Workspace, "scratch": s.Scratch, "dir": s.Dir} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("sandbox: %s %q is not an absolute path", name, p)
		}
	}
	inMount := false
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Path) {
			return fmt.Errorf("sandbox: mount %q is not an absolute path", m.Path)
		}
		inMount = inMount || within(s.Dir, m.Path)
	}
	if !within(s.Dir, s.Workspace) && !within(s.Dir, s.Scratch) && !inMount {
		return fmt.Errorf("sandbox: working directory %s is outside the workspace, the scratch folder and the mounts", s.Dir)
	}
	if s.ProxySocket != "" && !within(s.ProxySocket, s.Scratch) {
		return fmt.Errorf("sandbox: proxy socket %s is outside the scratch folder", s.ProxySocket)
	}
	return nil
}

// within reports whether path is dir or beneath it (both clean, absolute).
func within(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

func newCmd(hs helperSpec) (*Cmd, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: spec pipe: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{InitArg0},
		Env:        []string{helperEnv},
		Dir:        "/",
		ExtraFiles: []*os.File{specR, statusW},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  nsFlags,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			// Without setgroups the unprivileged gid mapping is refused.
			GidMappingsEnableSetgroups: false,
			Pdeathsig:                  syscall.SIGKILL,
			Setpgid:                    true,
		},
	}
	return &Cmd{Cmd: cmd, spec: hs, specW: specW, statusR: statusR, childEnds: []*os.File{specR, statusW}}, nil
}

var (
	dumpMu       sync.Mutex
	dumpStarting int  // helpers being started
	dumpRestore  bool // Ava was non-dumpable before the first of them
)

// dumpableWhileStarting makes Ava dumpable for as long as a helper is
// being started, and returns the function that ends it. Ava writes the
// new user namespace's uid and gid maps into /proc/<helper>, which a
// non-dumpable process's child (it inherits the flag until it executes)
// makes root's. While dumpable, only processes of Ava's user outside any
// sandbox could read Ava's memory, as they could before HardenSelf; a
// sandboxed process cannot see Ava's process at all.
func dumpableWhileStarting() func() {
	dumpMu.Lock()
	defer dumpMu.Unlock()
	if dumpStarting == 0 {
		d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		dumpRestore = d == 0
		if dumpRestore {
			_ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		}
	}
	dumpStarting++
	return func() {
		dumpMu.Lock()
		defer dumpMu.Unlock()
		dumpStarting--
		if dumpStarting == 0 && dumpRestore {
			_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		}
	}
}

// Start lists a writable workspace's repositories, starts the helper
// and sends it the spec.
func (c *Cmd) Start() error {
	if c.repos != nil {
		protect, err := c.repos.prepare()
		if err != nil {
			c.closePipes()
			return err
		}
		c.spec.Protect = protect
	}
	release := dumpableWhileStarting()
	err := c.Cmd.Start()
	release()
	for _, f := range c.childEnds {
		f.Close()
	}
	if err != nil {
		c.specW.Close()
		c.statusR.Close()
		return fmt.Errorf("sandbox: start helper: %w", err)
	}
	// The helper waits for its spec before it starts anything, so it is
	// in the cgroup before any of the command's processes exist.
	if err := c.joinCgroup(); err != nil {
		c.specW.Close()
		return err
	}
	data, err := json.Marshal(c.spec)
	if err == nil {
		_, err = c.specW.Write(data)
	}
	c.specW.Close()
	if err != nil {
		return fmt.Errorf("sandbox: send spec to helper: %w", err)
	}
	return nil
}

// joinCgroup puts the helper in a cgroup of its own capping its tasks,
// where Ava may make one.
func (c *Cmd) joinCgroup() error {
	parent := cgroupParent()
	if parent == "" || c.spec.Probe {
		return nil
	}
	cg, err := newCgroup(parent, c.spec.Limits.withDefaults().Processes)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	c.cgroup = cg
	if err := cg.add(c.Process.Pid); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// Wait waits for the helper, removes its cgroup, and moves aside any
// repository the command left in the workspace (see RepoChanges).
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	if c.cgroup != nil {
		c.cgroup.remove()
	}
	c.CheckRepos()
	return err
}

// closePipes closes every pipe end of a command that will not start.
func (c *Cmd) closePipes() {
	for _, f := range append(c.childEnds, c.specW, c.statusR) {
		f.Close()
	}
}

var (
	cgroupOnce sync.Once
	cgroupDir  string
)

// cgroupParent is where sandboxes' cgroups are made, found once; "" if
// nowhere.
func cgroupParent() string {
	cgroupOnce.Do(func() {
		cgroupDir = pidsParent()
		if cgroupDir != "" {
			removeStaleCgroups(cgroupDir)
		}
	})
	return cgroupDir
}

// Exit reads how the command ended; call it after Wait. It is an error
// when the helper could not set the sandbox up (nothing ran) or died
// before reporting (killed, for example on a timeout).
func (c *Cmd) Exit() (Exit, error) {
	st, err := c.status()
	if err != nil {
		return Exit{}, err
	}
	return st.Exit, nil
}

func (c *Cmd) status() (*helperStatus, error) {
	if c.statusCached != nil {
		return c.statusCached, nil
	}
	defer c.statusR.Close()
	data, err := io.ReadAll(io.LimitReader(c.statusR, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("sandbox: read helper status: %w", err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("sandbox: the helper ended without a report (%s)", c.ProcessState)
	}
	var st helperStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("sandbox: helper status %q: %w", data, err)
	}
	if st.Error != "" {
		return nil, &SetupError{Msg: st.Error}
	}
	c.statusCached = &st
	return &st, nil
}

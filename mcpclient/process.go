package mcpclient

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool/shell"
)

// maxSocketPath is the longest path a Unix socket may have (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// serverMemoryBytes caps a sandboxed server's address space: runtimes
// such as node reserve far more virtual memory than they use, as
// run_bash's compilers do (shell.DefaultBashMemoryLimitMB).
const serverMemoryBytes = uint64(shell.DefaultBashMemoryLimitMB) << 20

// process is a running stdio server: the command, or the sandbox's
// helper that runs it, its pipes, and the egress proxy of a server with
// network. Its process group is the server and everything it started
// (the helper's PID namespace, sandboxed).
type process struct {
	cmd *exec.Cmd
	box *sandbox.Cmd
	pid int
	// stdin and stdout are Ava's ends of the server's pipes.
	stdin  *os.File
	stdout *os.File
	// exited is closed once the process is reaped.
	exited chan struct{}
	egress *egress
}

// processPipes is the writing side of the MCP transport over the
// process's pipes: closing it closes the server's stdin, then ends the
// process (see terminate).
type processPipes struct{ p *process }

// Write sends to the server's stdin.
func (w processPipes) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }

// Close closes stdin and waits for the process to end, terminating it
// if it does not, as the MCP stdio transport asks.
func (w processPipes) Close() error {
	w.p.terminate()
	return nil
}

// folder returns the server's own folder, its working folder (and
// HOME, sandboxed), made if missing: the spec's Cwd, or
// <StateDir>/<name>. It is never the workspace nor inside it, so that
// nothing there (node_modules/.bin, a Python package, a relative
// command, what npx finds walking up) resolves before the server's own:
// where <StateDir> is in the workspace (a data root inside it), the
// folder is in a temporary folder of the pool's instead, and a Cwd in
// the workspace is refused.
func (s *server) folder() (string, error) {
	ws := s.p.workspace()
	dir, explicit := s.spec.Cwd, s.spec.Cwd != ""
	if !explicit {
		base, err := s.p.stateRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(base, s.spec.Name)
	}
	real, err := makeFolder(dir)
	if err != nil {
		return "", err
	}
	if ws == "" || !within(real, ws) {
		return real, nil
	}
	if explicit {
		return "", fmt.Errorf("its cwd %s is in the workspace %s, where the repository's own packages and commands would run instead of the server's: give a folder outside it", dir, ws)
	}
	base, err := s.p.tempRoot()
	if err != nil {
		return "", err
	}
	return makeFolder(filepath.Join(base, s.spec.Name))
}

// makeFolder makes dir (0700) if missing and returns its real path.
func makeFolder(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("its folder: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("its folder: %w", err)
	}
	return real, nil
}

// workspace is the pool's workspace with symlinks resolved, or "".
func (p *Pool) workspace() string {
	if p.opt.Workspace == "" {
		return ""
	}
	if real, err := filepath.EvalSymlinks(p.opt.Workspace); err == nil {
		return real
	}
	return filepath.Clean(p.opt.Workspace)
}

// within reports whether path is dir or beneath it (both clean).
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// sandboxed reports whether the server runs in the process sandbox: its
// spec does not opt out and AVA_SANDBOX is not off.
func (s *server) sandboxed() bool { return s.spec.Sandboxed() && !s.p.opt.SandboxOff }

// launch starts the server's process with its pipes; stderr goes to
// the connection's tail buffer.
func (s *server) launch(stderr io.Writer) (*process, error) {
	if s.sandboxed() {
		if err := s.p.probe().Err(); err != nil {
			return nil, fmt.Errorf("%w (or give this server sandbox: false to run it unconfined)", err)
		}
	}
	dir, err := s.folder()
	if err != nil {
		return nil, err
	}
	argv0 := s.spec.Command
	if strings.ContainsRune(argv0, filepath.Separator) && !filepath.IsAbs(argv0) {
		argv0 = filepath.Join(dir, argv0) // relative to its own folder, never the workspace
	}
	p := &process{exited: make(chan struct{})}
	if s.sandboxed() {
		err = s.sandboxCmd(p, dir, argv0)
	} else {
		err = s.plainCmd(p, dir, argv0)
	}
	if err != nil {
		p.egress.close()
		return nil, err
	}
	if err := p.start(stderr); err != nil {
		p.egress.close()
		return nil, err
	}
	return p, nil
}

// plainCmd prepares the unconfined command: the user's rights, in its
// own folder and process group.
func (s *server) plainCmd(p *process, dir, argv0 string) error {
	home, tmp := s.p.getenv("HOME"), s.p.getenv("TMPDIR")
	if home == "" {
		home = os.TempDir()
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	env := s.env(home, tmp)
	path, err := lookPath(argv0, env)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(path, s.spec.Args...)
	p.cmd.Env = env
	p.cmd.Dir = dir
	setProcessGroup(p.cmd)
	return nil
}

// lookPath finds a command name on the PATH of the server's
// environment (not Ava's own, which may hold the workspace's folders).
func lookPath(name string, env []string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) {
		return name, nil
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		f := filepath.Join(dir, name)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s not found on the server's PATH (%s)", name, path)
}

// sandboxTmp is a sandboxed server's TMPDIR: the sandbox's private
// /tmp, gone with it.
const sandboxTmp = "/tmp"

// sandboxCmd prepares the command in the sandbox: its folder as HOME,
// working folder and scratch, the sandbox's private /tmp as TMPDIR, the
// workspace, the configured paths, and the egress proxy if it has
// network.
func (s *server) sandboxCmd(p *process, dir, argv0 string) error {
	ws := s.p.workspace()
	if ws == "" {
		ws = dir
	}
	mounts, err := s.mounts()
	if err != nil {
		return err
	}
	spec := sandbox.Spec{Argv: append([]string{argv0}, s.spec.Args...), Dir: dir, Workspace: ws, Scratch: dir,
		Hide: s.p.hidden(), Mounts: mounts,
		Limits: sandbox.Limits{MemoryBytes: serverMemoryBytes, CPUSeconds: math.MaxUint64}}
	var extra []string
	if s.spec.Network {
		if p.egress, err = startEgress(dir, s.p.opt); err != nil {
			return err
		}
		spec.ProxySocket = p.egress.socket
		proxy := "http://127.0.0.1:" + strconv.Itoa(sandbox.ProxyPort)
		for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			extra = append(extra, name+"="+proxy)
		}
	}
	spec.Env = s.env(dir, sandboxTmp, extra...)
	box, err := sandbox.Command(spec)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	p.box, p.cmd = box, box.Cmd
	return nil
}

// mounts are the spec's read-only and writable paths, each an existing
// folder.
func (s *server) mounts() ([]sandbox.Mount, error) {
	var out []sandbox.Mount
	add := func(key string, paths []string, write bool) error {
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			if !fi.IsDir() {
				return fmt.Errorf("%s: %s is not a folder (give the folder that holds it)", key, p)
			}
			out = append(out, sandbox.Mount{Path: filepath.Clean(p), Write: write})
		}
		return nil
	}
	if err := add("read_only_paths", s.spec.ReadOnlyPaths, false); err != nil {
		return nil, err
	}
	if err := add("write_paths", s.spec.WritePaths, true); err != nil {
		return nil, err
	}
	return out, nil
}

// hidden are the folders no sandboxed server sees: the configured ones
// (the data root) and Ava's home folder. Its own folder, beneath one of
// them, is bound back on top.
func (p *Pool) hidden() []string {
	out := append([]string(nil), p.opt.Hide...)
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, home)
	}
	return out
}

// start starts the process with a pipe for stdin and one for stdout,
// and reaps it in the background (exited).
func (p *process) start(stderr io.Writer) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return fmt.Errorf("stdout pipe: %w", err)
	}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, stderr
	// A process that left the group holding stderr cannot stall Wait.
	p.cmd.WaitDelay = closeGrace
	if p.box != nil {
		err = p.box.Start()
	} else {
		err = p.cmd.Start()
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return fmt.Errorf("start: %w", err)
	}
	p.pid, p.stdin, p.stdout = p.cmd.Process.Pid, inW, outR
	wait := p.cmd.Wait
	if p.box != nil {
		wait = p.box.Wait // also removes its cgroup
	}
	go func() { // ends when the process does, which kill guarantees
		_ = wait()
		p.egress.close()
		close(p.exited)
	}()
	return nil
}

// terminate ends the server as the MCP stdio transport asks: it closes
// its stdin, waits for it to exit, then sends SIGTERM, then SIGKILL, to
// its process group.
func (p *process) terminate() {
	p.stdin.Close()
	if p.waitFor(closeGrace) {
		return
	}
	killProcessGroup(p.pid, syscall.SIGTERM)
	if p.waitFor(closeGrace) {
		return
	}
	p.kill()
}

// kill kills the process group and waits for the process to be reaped.
func (p *process) kill() {
	killProcessGroup(p.pid, syscall.SIGKILL)
	<-p.exited
	p.stdin.Close()
	p.stdout.Close()
}

// waitFor reports whether the process ends within d.
func (p *process) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// setupErr is why the sandbox could not be set up (nothing ran), once
// the process has ended; nil otherwise.
func (p *process) setupErr() error {
	if p.box == nil {
		return nil
	}
	select {
	case <-p.exited:
	default:
		return nil
	}
	_, err := p.box.Exit()
	var se *sandbox.SetupError
	if errors.As(err, &se) {
		return err
	}
	return nil
}

// getenv reads a variable of Ava's environment (Options.Environ).
func (p *Pool) getenv(k string) string {
	for i := len(p.opt.Environ) - 1; i >= 0; i-- {
		if name, v, ok := strings.Cut(p.opt.Environ[i], "="); ok && name == k {
			return v
		}
	}
	return ""
}

// env is a stdio server's environment: the allow-listed part of Ava's
// (never its secrets), with a PATH that leaves out relative folders and
// folders of the workspace; HOME and TMPDIR; extra; the variables of
// PassEnv; then the spec's Env.
func (s *server) env(home, tmp string, extra ...string) []string {
	for _, k := range s.spec.PassEnv {
		extra = append(extra, k+"="+s.p.getenv(k))
	}
	keys := make([]string, 0, len(s.spec.Env))
	for k := range s.spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra = append(extra, k+"="+s.spec.Env[k])
	}
	// One PATH only: a command started without Go's exec (the sandbox's
	// shell) may take the first of two.
	environ := make([]string, 0, len(s.p.opt.Environ))
	for _, kv := range s.p.opt.Environ {
		if !strings.HasPrefix(kv, "PATH=") {
			environ = append(environ, kv)
		}
	}
	if path := s.p.safePath(s.p.getenv("PATH")); path != "" {
		environ = append(environ, "PATH="+path)
	}
	return shell.CommandEnv(environ, home, tmp, extra...)
}

// safePath is PATH without relative entries (the working folder) and
// without folders in the workspace (a project's node_modules/.bin or
// virtualenv that a shell hook put first): a server's command and what
// it runs by name never resolve to the repository's files.
func (p *Pool) safePath(path string) string {
	ws := p.workspace()
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if real, err := filepath.EvalSymlinks(d); err == nil {
			if ws != "" && within(real, ws) {
				continue
			}
		}
		if ws != "" && within(d, ws) {
			continue
		}
		keep = append(keep, d)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// egress is the egress proxy of one sandboxed server with network, on
// a Unix socket in its folder that the sandbox's helper relays to.
type egress struct {
	socket string
	ln     net.Listener
	proxy  *sandbox.Proxy
	served chan struct{}
}

// startEgress serves the egress proxy, guarded like the web tools, for
// a server whose folder is dir.
func startEgress(dir string, opt Options) (*egress, error) {
	if opt.EgressGuard == nil {
		return nil, errors.New("network: true but no egress address guard is configured")
	}
	sock := filepath.Join(dir, ".egress.sock")
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("network: the egress socket path %s is longer than %d bytes: give the server a shorter cwd", sock, maxSocketPath)
	}
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	e := &egress{socket: sock, ln: ln, proxy: &sandbox.Proxy{Guard: opt.EgressGuard, Allow: opt.EgressAllow, Log: opt.Logger}, served: make(chan struct{})}
	go func() { // ends at close
		defer close(e.served)
		_ = e.proxy.Serve(ln)
	}()
	return e, nil
}

// close stops the proxy and waits for it; a nil egress does nothing.
func (e *egress) close() {
	if e == nil {
		return
	}
	e.ln.Close()
	e.proxy.Close()
	<-e.served
	_ = os.Remove(e.socket)
}

package shell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool"
)

// envAllowed are the variables of Ava's environment a command gets;
// every other one is dropped, whatever its name.
var envAllowed = []string{"PATH", "LANG", "LANGUAGE", "TERM", "TZ", "NO_COLOR", "COLORTERM"}

// defaultPath is the command's PATH when Ava has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// CommandEnv builds a command's environment from an allow-list: PATH,
// LANG, LANGUAGE, LC_*, TERM, TZ, NO_COLOR and COLORTERM from env, HOME
// and TMPDIR set to home and tmp, then extra. Nothing else of env is
// passed, so a secret in Ava's environment never reaches a command
// whatever its name.
func CommandEnv(env []string, home, tmp string, extra ...string) []string {
	out := make([]string, 0, 8+len(extra))
	hasPath := false
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(envAllowed, name) || strings.HasPrefix(name, "LC_") {
			out = append(out, kv)
			hasPath = hasPath || name == "PATH"
		}
	}
	if !hasPath {
		out = append(out, "PATH="+defaultPath)
	}
	out = append(out, "HOME="+home, "TMPDIR="+tmp)
	return append(out, extra...)
}

// callSetup is what one call runs with: a scratch folder, an
// environment and, sandboxed, the sandbox and its egress proxy.
type callSetup struct {
	scratch string
	env     []string
	box     *sandbox.Spec
	proxy   *sandbox.Proxy
	ln      net.Listener
	served  chan struct{}
}

// sandboxRefusal is why process tools may not run here, or "" when they
// may: the sandbox is ready or explicitly off.
func (t *Tools) sandboxRefusal() string {
	if t.cfg.SandboxOff {
		return ""
	}
	if err := t.cfg.Probe().Err(); err != nil {
		return err.Error()
	}
	return ""
}

// setup makes the call's scratch folder and, unless the sandbox is off,
// its sandbox spec, with memMB as the address-space limit, and the
// egress proxy when the network is allowed. extra is added to the
// environment.
func (t *Tools) setup(ctx context.Context, workspace string, memMB int, extra ...string) (*callSetup, error) {
	scratch, err := os.MkdirTemp("", "ava-run-")
	if err != nil {
		return nil, fmt.Errorf("scratch folder: %w", err)
	}
	c := &callSetup{scratch: scratch}
	if t.cfg.SandboxOff {
		home, _ := os.UserHomeDir()
		c.env = CommandEnv(os.Environ(), home, scratch, extra...)
		return c, nil
	}
	caller, _ := tool.CallerFrom(ctx)
	c.box = &sandbox.Spec{
		Workspace: workspace, WorkspaceReadOnly: t.cfg.WorkspaceReadOnly || caller.WorkspaceReadOnly, Scratch: scratch, Hide: t.hidden(),
		Limits: sandbox.Limits{Processes: uint64(t.cfg.Processes), MemoryBytes: uint64(memMB) << 20,
			CPUSeconds: uint64(t.cfg.CPUSeconds), FileBytes: sandbox.DefaultLimits.FileBytes},
	}
	if t.cfg.Network || caller.ProcessNetwork {
		if err := c.startProxy(t.cfg); err != nil {
			c.close()
			return nil, err
		}
		proxy := "http://127.0.0.1:" + strconv.Itoa(sandbox.ProxyPort)
		for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			extra = append(extra, name+"="+proxy)
		}
	}
	c.env = CommandEnv(os.Environ(), scratch, scratch, extra...)
	return c, nil
}

// hidden are the folders no command sees: the configured ones and Ava's
// home folder.
func (t *Tools) hidden() []string {
	out := slices.Clone(t.cfg.Hide)
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, home)
	}
	return out
}

// startProxy serves the egress proxy on a Unix socket in the scratch
// folder, where the sandbox's helper relays the command's connections.
func (c *callSetup) startProxy(cfg Config) error {
	if cfg.EgressGuard == nil {
		return errors.New("network allowed but no egress address guard configured")
	}
	sock := filepath.Join(c.scratch, ".egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	c.box.ProxySocket = sock
	c.ln = ln
	c.proxy = &sandbox.Proxy{Guard: cfg.EgressGuard, Allow: cfg.EgressAllow}
	c.served = make(chan struct{})
	go func() {
		defer close(c.served)
		_ = c.proxy.Serve(ln)
	}()
	return nil
}

// close stops the proxy, waits for it, and removes the scratch folder.
func (c *callSetup) close() {
	if c.ln != nil {
		c.ln.Close()
		c.proxy.Close()
		<-c.served
	}
	os.RemoveAll(c.scratch)
}

package mcpclient_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool/web"
)

// These tests run the test binary as a server in the real sandbox. Each
// probe of a protection is also run on an unsandboxed server, where it
// succeeds: the probe works.

func needSandbox(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox is Linux-only")
	}
	if st := sandbox.Probe(); !st.Ready {
		t.Fatalf("the sandbox is not available on this machine: %s", st.Summary())
	}
}

// boxed is stdio's spec run in the sandbox, with the test binary's
// folder (in the hidden /tmp) mounted read-only so it can run.
func boxed(t *testing.T, name, mode string) mcpclient.Spec {
	t.Helper()
	sp := stdio(t, name, mode)
	sp.Sandbox = nil
	sp.ReadOnlyPaths = []string{filepath.Dir(sp.Command)}
	return sp
}

// loopback is a server on Ava's loopback that counts its requests.
func loopback(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "REACHED")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// confinedSetup plants secrets where a server must not reach them: in
// Ava's environment, in a home folder (.ssh), in the data root, and in
// a folder outside every hidden one (only Landlock keeps a server out of
// it). It returns the pool options and the paths to probe.
func confinedSetup(t *testing.T) (opt mcpclient.Options, secret string, probes []string, ws string) {
	t.Helper()
	secret = fmt.Sprintf("FAKE-SECRET-%d", os.Getpid())
	t.Setenv("FAKE_SERVICE_TOKEN", secret)
	home := t.TempDir()
	t.Setenv("HOME", home)
	dataRoot, ws := t.TempDir(), t.TempDir()
	outside, err := os.MkdirTemp(".", ".mcp-probe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	if outside, err = filepath.Abs(outside); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(dataRoot, "ava.db"), filepath.Join(outside, "secret")} {
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(secret), 0o600))
		probes = append(probes, p)
	}
	probes = append(probes, fmt.Sprintf("/proc/%d/environ", os.Getpid()))
	must(t, os.WriteFile(filepath.Join(ws, "note.txt"), []byte("workspace note"), 0o600))
	opt = mcpclient.Options{Workspace: ws, StateDir: filepath.Join(dataRoot, "mcp"), Hide: []string{dataRoot}}
	return opt, secret, probes, ws
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A sandboxed server reads none of the planted secrets, reaches no
// listener on Ava's loopback, runs in its own folder (its HOME too),
// sees the workspace, and gets no secret of Ava's environment. An
// unsandboxed server with the same probes reads and reaches them.
func TestSandboxedServerConfined(t *testing.T) {
	needSandbox(t)
	opt, secret, probes, ws := confinedSetup(t)
	srv, hits := loopback(t)
	addr := srv.Listener.Addr().String()
	opt.Servers = []mcpclient.Spec{boxed(t, "srv", "normal"), stdio(t, "open", "normal")}
	p := newPool(t, opt)
	tools, err := p.Tools(ctxT(t), []string{"srv", "open"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range probes {
		if res := call(t, tools, "srv__read", fmt.Sprintf(`{"path":%q}`, path)); strings.Contains(res.Output, secret) {
			t.Errorf("the sandboxed server read %s: %s", path, res.Output)
		}
	}
	if res := call(t, tools, "srv__dial", fmt.Sprintf(`{"addr":%q}`, addr)); !strings.HasPrefix(res.Output, "refused") {
		t.Errorf("the sandboxed server reached Ava's loopback: %+v", res)
	}
	if res := call(t, tools, "srv__read", fmt.Sprintf(`{"path":%q}`, filepath.Join(ws, "note.txt"))); res.Output != "workspace note" {
		t.Errorf("the workspace is not visible: %+v", res)
	}
	own := filepath.Join(opt.StateDir, "srv")
	if res := call(t, tools, "srv__cwd", `{}`); res.Output != own {
		t.Errorf("working folder %q, want %q", res.Output, own)
	}
	env := call(t, tools, "srv__env", `{}`).Output
	if strings.Contains(env, secret) || !strings.Contains(env, "HOME="+own+"\n") || !strings.Contains(env, "TMPDIR=/tmp\n") || strings.Count(env, "PATH=") != 1 {
		t.Errorf("environment:\n%s", env)
	}
	if st := status(p, "srv"); !strings.HasPrefix(st.Confinement, "sandboxed, no network") {
		t.Errorf("confinement %q", st.Confinement)
	}
	// Unconfined, the same probes succeed (but its folder is still its own).
	if res := call(t, tools, "open__read", fmt.Sprintf(`{"path":%q}`, probes[2])); res.Output != secret {
		t.Errorf("unsandboxed probe did not read the secret: %+v", res)
	}
	if res := call(t, tools, "open__dial", fmt.Sprintf(`{"addr":%q}`, addr)); res.Output != "CONNECTED" {
		t.Errorf("unsandboxed probe did not connect: %+v", res)
	}
	if res := call(t, tools, "open__cwd", `{}`); res.Output != filepath.Join(opt.StateDir, "open") {
		t.Errorf("unsandboxed working folder %q", res.Output)
	}
	if st := status(p, "open"); !strings.HasPrefix(st.Confinement, "UNSANDBOXED (sandbox: false)") {
		t.Errorf("confinement %q", st.Confinement)
	}
	if hits.Load() != 0 {
		t.Errorf("the loopback server got %d HTTP requests", hits.Load())
	}
}

// A repository a sandboxed server plants in the workspace during a call
// is moved aside when the call returns, and the result says so.
func TestSandboxedServerPlantedRepositoryMovedAside(t *testing.T) {
	needSandbox(t)
	opt, _, _, ws := confinedSetup(t)
	opt.Servers = []mcpclient.Spec{boxed(t, "srv", "normal")}
	p := newPool(t, opt)
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, tools, "srv__plant", fmt.Sprintf(`{"path":%q}`, filepath.Join(ws, "docs")))
	if !strings.Contains(res.Output, "PLANTED") || !strings.Contains(res.Output, "moved aside") {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "docs", ".git")); err == nil {
		t.Fatal("the planted repository is still in place")
	}
}

// With network: true a sandboxed server reaches the network only
// through the egress proxy: a direct connection fails, and the proxy
// applies its guard (the web tools' refuses loopback; a guard allowing
// it shows the path through the proxy works).
func TestSandboxedServerNetworkOnlyThroughProxy(t *testing.T) {
	needSandbox(t)
	srv, hits := loopback(t)
	for _, c := range []struct {
		name  string
		guard func(netip.Addr) error
		want  string
	}{
		{"public", web.CheckPublic, "egress refused"},
		{"loopback", func(netip.Addr) error { return nil }, "200 OK REACHED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := boxed(t, "srv", "normal")
			sp.Network = true
			p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{sp}, Workspace: t.TempDir(), StateDir: t.TempDir(), EgressGuard: c.guard})
			tools, err := p.Tools(ctxT(t), []string{"srv"})
			if err != nil {
				t.Fatal(err)
			}
			before := hits.Load()
			if res := call(t, tools, "srv__fetch", fmt.Sprintf(`{"addr":%q}`, srv.URL)); !strings.Contains(res.Output, c.want) {
				t.Errorf("through the proxy: %+v, want %q", res, c.want)
			}
			if res := call(t, tools, "srv__dial", fmt.Sprintf(`{"addr":%q}`, srv.Listener.Addr().String())); !strings.HasPrefix(res.Output, "refused") {
				t.Errorf("direct connection: %+v", res)
			}
			if got := hits.Load() - before; (c.want == "egress refused") != (got == 0) {
				t.Errorf("the loopback server got %d requests", got)
			}
			if st := status(p, "srv"); st.Confinement != "sandboxed, network only through the egress proxy" {
				t.Errorf("confinement %q", st.Confinement)
			}
		})
	}
}

// Where the sandbox is unavailable, a sandboxed server refuses to start
// with the process tools' message, and nothing runs; AVA_SANDBOX=off
// (SandboxOff) runs it unconfined, shown as such.
func TestSandboxUnavailableRefuses(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	missing := func() sandbox.Status { return sandbox.Status{Missing: []string{"Landlock (test)"}} }
	sp := stdio(t, "srv", "normal")
	sp.Sandbox = nil
	sp.Command, sp.Args = "/bin/sh", []string{"-c", "touch " + marker}
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{sp}, Probe: missing})
	if st := status(p, "srv"); !strings.Contains(st.Confinement, "UNAVAILABLE") {
		t.Errorf("confinement %q", st.Confinement)
	}
	_, err := p.Tools(ctxT(t), []string{"srv"})
	if err == nil || !strings.Contains(err.Error(), "the process sandbox is not available (missing: Landlock (test))") ||
		!strings.Contains(err.Error(), "AVA_SANDBOX=off") || !strings.Contains(err.Error(), "MCP server srv") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the server ran")
	}
	sp = stdio(t, "box", "normal")
	sp.Sandbox = nil
	off := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{sp}, Probe: missing, SandboxOff: true})
	if _, err := off.Tools(ctxT(t), []string{"box"}); err != nil {
		t.Fatal(err)
	}
	if st := status(off, "box"); !strings.HasPrefix(st.Confinement, "UNSANDBOXED (AVA_SANDBOX=off)") {
		t.Errorf("confinement %q", st.Confinement)
	}
}

// No server starts in the workspace, nor resolves a command there: a
// relative command, a name on a PATH folder in the workspace (a
// project's node_modules/.bin put first by a shell hook) and a cwd in
// the workspace are all refused, and the planted shim never runs, even
// unsandboxed.
func TestServerNeverRunsWorkspaceCode(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(t.TempDir(), "pwned")
	bin := filepath.Join(ws, "node_modules", ".bin")
	must(t, os.MkdirAll(bin, 0o755))
	must(t, os.WriteFile(filepath.Join(bin, "mcp-server-x"), []byte("#!/bin/sh\necho pwned > "+marker+"\n"), 0o755))
	// Ava's own PATH has the folder too, as a shell hook would put it.
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	off := false
	specs := []mcpclient.Spec{
		{Name: "relative", Command: "node_modules/.bin/mcp-server-x", Sandbox: &off},
		{Name: "onpath", Command: "mcp-server-x", Sandbox: &off},
		{Name: "onpath-boxed", Command: "mcp-server-x"},
		{Name: "relative-boxed", Command: "node_modules/.bin/mcp-server-x"},
		{Name: "incwd", Command: "/bin/true", Cwd: ws, Sandbox: &off},
	}
	p := newPool(t, mcpclient.Options{Servers: specs, Workspace: ws, StateDir: t.TempDir(),
		Environ: []string{"PATH=./node_modules/.bin:" + os.Getenv("PATH")}})
	for _, sp := range specs {
		if _, err := p.Tools(ctxT(t), []string{sp.Name}); err == nil {
			t.Errorf("%s: started", sp.Name)
		} else if sp.Name == "incwd" && !strings.Contains(err.Error(), "is in the workspace") {
			t.Errorf("%s: %v", sp.Name, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the workspace's shim ran")
	}
	// A data root inside the workspace: the server's folder moves out.
	inner := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}, Workspace: ws, StateDir: filepath.Join(ws, ".data", "mcp")})
	tools, err := inner.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	if cwd := call(t, tools, "srv__cwd", `{}`).Output; strings.HasPrefix(cwd, ws) {
		t.Errorf("the server runs in %s, in the workspace", cwd)
	}
}

// A sandboxed server's whole PID namespace ends with the pool: the
// helper (its PID in Status) and the child it started.
func TestSandboxedServerStopsWithPool(t *testing.T) {
	needSandbox(t)
	p, err := mcpclient.New(mcpclient.Options{Servers: []mcpclient.Spec{boxed(t, "srv", "normal")}, Workspace: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	call(t, tools, "srv__child", `{}`)
	helper := status(p, "srv").PID
	children := childrenOf(helper)
	if helper == 0 || len(children) == 0 {
		p.Close()
		t.Fatalf("helper %d, children %v", helper, children)
	}
	p.Close()
	eventually(t, "the helper and its processes are gone", func() bool {
		if alive(helper) {
			return false
		}
		for _, c := range children {
			if alive(c) {
				return false
			}
		}
		return true
	})
}

// childrenOf lists the live descendants of pid.
func childrenOf(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p, p))
		for _, f := range strings.Fields(string(b)) {
			var c int
			if _, err := fmt.Sscan(f, &c); err == nil {
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

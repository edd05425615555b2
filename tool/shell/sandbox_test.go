package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool/web"
)

// These tests run real commands in the real sandbox. Each protection is
// checked by a probe that succeeds unconfined (most tests run the probe
// with SandboxOff too, to prove the probe itself works).

func needSandbox(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox is Linux-only")
	}
	if st := sandbox.Probe(); !st.Ready {
		t.Fatalf("the sandbox is not available on this machine: %s", st.Summary())
	}
}

// token is a unique marker to find a test's processes by command line:
// sleep accepts "30.<digits>" as a duration.
func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	n, _ := strconv.ParseUint(hex.EncodeToString(b), 16, 64)
	return fmt.Sprintf("%d", n%1_000_000_000+1)
}

// marked lists this machine's live processes whose command line holds
// "sleep" and the token (zombies excluded: they run no more).
func marked(tok string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), "."+tok) || !strings.Contains(string(cmd), "sleep") {
			continue
		}
		if st, _ := os.ReadFile("/proc/" + e.Name() + "/stat"); strings.Contains(string(st), ") Z ") {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// waitNoneMarked waits up to 3 s for every marked process to be gone.
func waitNoneMarked(t *testing.T, tok string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := marked(tok)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v survived the call", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A process that leaves the call's process group and session (setsid)
// dies with the sandbox when the command ends.
func TestSandboxSetsidSurvivorDies(t *testing.T) {
	needSandbox(t)
	tok := token(t)
	tools := New(Config{Workspace: t.TempDir()})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "setsid sleep 30." + tok + " > /dev/null 2>&1 & sleep 0.3; echo started"})
	if res.IsError || res.Output != "started\n" {
		t.Fatalf("got %+v", res)
	}
	waitNoneMarked(t, tok)
}

// The same, when Ava itself is killed with SIGKILL mid-call: a child
// test process plays Ava (see TestMain and runAsAva).
func TestSandboxSetsidSurvivorDiesWithAva(t *testing.T) {
	needSandbox(t)
	tok := token(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), avaChildEnv+"=setsid sleep 30."+tok+" > /dev/null 2>&1 & sleep 30."+tok, "AVA_TEST_WORKSPACE="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(tok)) < 2 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the child's command never started (marked: %v)", marked(tok))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoneMarked(t, tok)
}

// avaChildEnv makes the test binary a stand-in for Ava that runs one
// run_bash command (the variable's value) and waits.
const avaChildEnv = "AVA_TEST_SANDBOX_CHILD"

// runAsAva is the child's whole life: it runs until killed.
func runAsAva() {
	tools := New(Config{Workspace: os.Getenv("AVA_TEST_WORKSPACE"), Timeout: time.Minute})
	res, err := tools.RunBash().Run(context0(), []byte(fmt.Sprintf(`{"command": %q}`, os.Getenv(avaChildEnv))))
	fmt.Println(res, err)
	os.Exit(0)
}

// A fork flood hits the process limit and ends with the call.
func TestSandboxForkFloodIsContained(t *testing.T) {
	needSandbox(t)
	tok := token(t)
	tools := New(Config{Workspace: t.TempDir(), Processes: 40, Timeout: 3 * time.Second})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "for i in $(seq 1 400); do sleep 30." + tok + " & done; wait"})
	if !strings.Contains(res.Output, "Resource temporarily unavailable") {
		t.Fatalf("the flood did not hit the process limit: %+v", res)
	}
	if n := len(marked(tok)); n > 40 {
		t.Errorf("%d flood processes alive at once, limit 40", n)
	}
	waitNoneMarked(t, tok)
}

// plantSecrets gives this process (Ava) a fake secret in its environment
// and a home folder with a planted SSH key and cloud credentials.
func plantSecrets(t *testing.T) (home, secret string) {
	t.Helper()
	secret = "FAKE-SECRET-" + token(t)
	t.Setenv("FAKE_SERVICE_TOKEN", secret)
	home = t.TempDir()
	t.Setenv("HOME", home)
	for name, body := range map[string]string{".ssh/id_rsa": "-----BEGIN KEY-----\n" + secret + "\n", ".aws/credentials": "aws_secret_access_key=" + secret + "\n"} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home, secret
}

// Neither Ava's environment nor a planted key, nor the data root, can be
// read; nothing outside the workspace and scratch folder can be written.
func TestSandboxFilesystemAndProc(t *testing.T) {
	needSandbox(t)
	if err := sandbox.HardenSelf(); err != nil {
		t.Fatal(err)
	}
	home, secret := plantSecrets(t)
	dataRoot := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataRoot, "ava.db"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	// A folder outside every hidden one (not /tmp, not HOME), where only
	// Landlock keeps the command out.
	outside, err := os.MkdirTemp(".", ".sandbox-probe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	if outside, err = filepath.Abs(outside); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf(`cat /proc/%[1]d/environ; cat /proc/%[1]d/cmdline; cat /proc/1/environ; cat %[2]s/.ssh/id_rsa %[2]s/.aws/credentials; cat %[3]s/ava.db;
cat %[4]s/secret; echo pwn > %[4]s/x; echo evil > %[3]s/agents.md; echo evil > /etc/ava-probe; echo ok > inside.txt && echo wrote-inside`, os.Getpid(), home, dataRoot, outside)
	ws := t.TempDir()
	tools := New(Config{Workspace: ws, Hide: []string{dataRoot}})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": probe})
	if strings.Contains(res.Output, secret) {
		t.Fatalf("a secret was read:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "wrote-inside") {
		t.Fatalf("the workspace is not writable:\n%s", res.Output)
	}
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(dataRoot, "agents.md"), "/etc/ava-probe"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("the command wrote %s", p)
		}
	}
	// Unconfined, the same probe reads the planted key: the probe works.
	res = call(t, t.Context(), New(Config{Workspace: ws, SandboxOff: true}).RunBash(), map[string]any{"command": "cat " + home + "/.ssh/id_rsa"})
	if !strings.Contains(res.Output, secret) {
		t.Fatalf("unconfined probe did not read the key: %+v", res)
	}
}

// python_exec cannot read the key or Ava's environment either.
func TestSandboxPythonCannotReadSecrets(t *testing.T) {
	needSandbox(t)
	needPython(t)
	home, secret := plantSecrets(t)
	code := fmt.Sprintf(`for p in ["/proc/%d/environ", "%s/.ssh/id_rsa", "%s/.aws/credentials"]:
    try:
        print(open(p, "rb").read())
    except Exception as e:
        print("refused", p, type(e).__name__)
`, os.Getpid(), home, home)
	res := call(t, t.Context(), New(Config{Workspace: t.TempDir()}).PythonExec(), map[string]any{"code": code})
	if strings.Contains(res.Output, secret) || strings.Count(res.Output, "refused") != 3 {
		t.Fatalf("got %+v", res)
	}
}

// loopbackServer counts the requests that reach it.
func loopbackServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "REACHED")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// Without network, neither tool reaches a server on Ava's loopback.
func TestSandboxNoNetwork(t *testing.T) {
	needSandbox(t)
	needPython(t)
	srv, hits := loopbackServer(t)
	port := srv.Listener.Addr().(*net_TCPAddr).Port
	tools := New(Config{Workspace: t.TempDir()})
	bash := fmt.Sprintf("curl -sS --max-time 3 %s/; exec 3<>/dev/tcp/127.0.0.1/%d && echo CONNECTED", srv.URL, port)
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": bash})
	if strings.Contains(res.Output, "REACHED") || strings.Contains(res.Output, "CONNECTED") {
		t.Fatalf("run_bash reached the loopback server: %+v", res)
	}
	py := fmt.Sprintf("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), timeout=3)\n    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e)\n", port)
	res = call(t, t.Context(), tools.PythonExec(), map[string]any{"code": py})
	if strings.Contains(res.Output, "CONNECTED") || !strings.Contains(res.Output, "refused") {
		t.Fatalf("python_exec reached the loopback server: %+v", res)
	}
	if hits.Load() != 0 {
		t.Fatalf("the server got %d requests", hits.Load())
	}
	// Unconfined, the same probe connects: the probe works.
	res = call(t, t.Context(), New(Config{Workspace: t.TempDir(), SandboxOff: true}).RunBash(), map[string]any{"command": bash})
	if !strings.Contains(res.Output, "REACHED") {
		t.Fatalf("unconfined probe did not connect: %+v", res)
	}
}

// With network allowed, traffic goes only through the egress proxy,
// which refuses loopback and private addresses like the web tools; a
// guard that allows loopback shows the path through the proxy works.
func TestSandboxNetworkOnlyThroughProxy(t *testing.T) {
	needSandbox(t)
	needPython(t)
	srv, hits := loopbackServer(t)
	tools := New(Config{Workspace: t.TempDir(), Network: true, EgressGuard: web.CheckPublic})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "curl -sS --max-time 5 " + srv.URL + "/ ; curl -sS --max-time 5 --noproxy '*' " + srv.URL + "/"})
	if strings.Contains(res.Output, "REACHED") || !strings.Contains(res.Output, "loopback") {
		t.Fatalf("run_bash: %+v", res)
	}
	py := "import urllib.request\ntry:\n    print(urllib.request.urlopen('" + srv.URL + "/', timeout=5).read())\nexcept Exception as e:\n    print('refused', e)\n"
	res = call(t, t.Context(), tools.PythonExec(), map[string]any{"code": py})
	if strings.Contains(res.Output, "REACHED") || !strings.Contains(res.Output, "refused") {
		t.Fatalf("python_exec: %+v", res)
	}
	if hits.Load() != 0 {
		t.Fatalf("the server got %d requests", hits.Load())
	}
	allowAll := func(netip.Addr) error { return nil }
	open := New(Config{Workspace: t.TempDir(), Network: true, EgressGuard: allowAll})
	res = call(t, t.Context(), open.RunBash(), map[string]any{"command": "curl -sS --max-time 5 " + srv.URL + "/"})
	if !strings.Contains(res.Output, "REACHED") || hits.Load() != 1 {
		t.Fatalf("through a permissive proxy: %+v (hits %d)", res, hits.Load())
	}
	// The allow-list refuses other domains.
	listed := New(Config{Workspace: t.TempDir(), Network: true, EgressGuard: allowAll, EgressAllow: []string{"example.org"}})
	res = call(t, t.Context(), listed.RunBash(), map[string]any{"command": "curl -sS --max-time 5 " + srv.URL + "/"})
	if strings.Contains(res.Output, "REACHED") || !strings.Contains(res.Output, sandbox.EnvEgressAllow) {
		t.Fatalf("allow-list: %+v", res)
	}
}

// The seccomp filter refuses new namespaces and ptrace; the read-only
// workspace cannot be written.
func TestSandboxSeccompAndReadOnlyWorkspace(t *testing.T) {
	needSandbox(t)
	tools := New(Config{Workspace: t.TempDir(), WorkspaceReadOnly: true})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "unshare -U true && echo UNSHARED; echo x > f && echo WROTE; echo done"})
	if strings.Contains(res.Output, "UNSHARED") || strings.Contains(res.Output, "WROTE") || !strings.Contains(res.Output, "done") {
		t.Fatalf("got %+v", res)
	}
}

// Where the sandbox is missing, the tools refuse, naming what is missing.
func TestSandboxMissingRefuses(t *testing.T) {
	missing := func() sandbox.Status { return sandbox.Status{Missing: []string{"Landlock (test)"}} }
	tools := New(Config{Workspace: t.TempDir(), Probe: missing})
	for _, tl := range tools.All() {
		args := map[string]any{"command": "echo RAN"}
		if tl.Name() == "python_exec" {
			args = map[string]any{"code": "print('RAN')"}
		}
		res := call(t, t.Context(), tl, args)
		if !res.IsError || strings.Contains(res.Output, "RAN\n") || !strings.Contains(res.Output, "Landlock (test)") || !strings.Contains(res.Output, "AVA_SANDBOX=off") {
			t.Fatalf("%s: got %+v", tl.Name(), res)
		}
	}
}

type net_TCPAddr = net.TCPAddr

func context0() context.Context { return context.Background() }

// A data root inside the workspace is hidden too, and the workspace
// around it stays usable.
func TestSandboxHidesDataRootInsideWorkspace(t *testing.T) {
	needSandbox(t)
	ws := t.TempDir()
	dataRoot := filepath.Join(ws, ".ava-data")
	if err := os.MkdirAll(filepath.Join(dataRoot, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataRoot, "ava.db"), []byte("DATA-ROOT-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	tools := New(Config{Workspace: ws, Hide: []string{dataRoot}})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "cat .ava-data/ava.db; echo evil > .ava-data/agents/web_crawler.md; echo ok > kept.txt && cat kept.txt"})
	if strings.Contains(res.Output, "DATA-ROOT-SECRET") || !strings.Contains(res.Output, "ok") {
		t.Fatalf("got %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dataRoot, "agents", "web_crawler.md")); err == nil {
		t.Fatal("the command wrote into the data root")
	}
	if _, err := os.Stat(filepath.Join(ws, "kept.txt")); err != nil {
		t.Fatalf("the workspace write did not land: %v", err)
	}
}

// A repository run_bash plants in the workspace is moved aside when the
// command ends, and the result the model and the person read says so.
func TestSandboxPlantedRepositoryReported(t *testing.T) {
	needSandbox(t)
	ws := t.TempDir()
	tools := New(Config{Workspace: ws})
	res := call(t, t.Context(), tools.RunBash(), map[string]any{"command": "git init -q docs && git -C docs config core.fsmonitor 'touch /x #' && echo planted"})
	if !strings.Contains(res.Output, "planted") || !strings.Contains(res.Output, "moved aside") || !strings.Contains(res.Output, filepath.Join(ws, "docs", ".git")) {
		t.Fatalf("got %+v", res)
	}
	if _, err := os.Stat(filepath.Join(ws, "docs", ".git")); err == nil {
		t.Fatal("the planted repository is still in place")
	}
}

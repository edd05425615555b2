package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/mcpspec"
	"github.com/avaagent/ava/tool"
)

// stdio is a spec that runs the test binary as a server in mode,
// unsandboxed: these tests check the pool's handling of processes by
// their host PIDs (sandbox_test.go runs servers in the sandbox).
func stdio(t *testing.T, name, mode string) mcpclient.Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	off := false
	return mcpclient.Spec{Name: name, Command: exe, Env: map[string]string{serverEnv: mode}, Sandbox: &off}
}

// newPool returns a pool closed at the end of the test.
func newPool(t *testing.T, opt mcpclient.Options) *mcpclient.Pool {
	t.Helper()
	p, err := mcpclient.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// call calls the named tool among tools.
func call(t *testing.T, tools []tool.Tool, name, args string) tool.Result {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == name {
			res, err := tl.Run(ctxT(t), json.RawMessage(args))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s among %v", name, names(tools))
	return tool.Result{}
}

func names(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name())
	}
	return out
}

// alive reports a process that exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// eventually waits for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func status(p *mcpclient.Pool, name string) mcpclient.Status {
	for _, s := range p.Status() {
		if s.Name == name {
			return s
		}
	}
	return mcpclient.Status{}
}

func pidOf(t *testing.T, tools []tool.Tool) int {
	t.Helper()
	res := call(t, tools, "srv__pid", `{}`)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil {
		t.Fatalf("pid: %q", res.Output)
	}
	return pid
}

func TestLazyStartAndResults(t *testing.T) {
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}})
	if st := status(p, "srv"); st.State != mcpclient.StateNotStarted || st.PID != 0 || st.Starts != 0 {
		t.Fatalf("before first use: %+v", st)
	}
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"srv__child", "srv__cwd", "srv__dial", "srv__die", "srv__echo", "srv__env", "srv__fail", "srv__fetch", "srv__pid", "srv__plant", "srv__read", "srv__slow", "srv__sum"}
	if got := names(tools); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	st := status(p, "srv")
	if st.State != mcpclient.StateRunning || st.PID == 0 || !alive(st.PID) || st.Starts != 1 {
		t.Fatalf("after first use: %+v", st)
	}
	for _, tl := range tools {
		if tl.Name() == "srv__echo" {
			if !strings.Contains(string(tl.Schema()), `"text"`) || !strings.Contains(tl.Description(), "Say the text back.") ||
				!strings.Contains(tl.Description(), "MCP server srv") {
				t.Errorf("echo: schema %s, description %q", tl.Schema(), tl.Description())
			}
		}
	}
	if res := call(t, tools, "srv__echo", `{"text":"hi"}`); res.IsError || res.Output != "echo: hi" {
		t.Errorf("echo: %+v", res)
	}
	if res := call(t, tools, "srv__sum", `{"a":2,"b":3}`); res.IsError || !strings.Contains(res.Output, `"sum":5`) {
		t.Errorf("sum: %+v", res)
	}
	if res := call(t, tools, "srv__fail", ``); !res.IsError || !strings.Contains(res.Output, "on purpose") {
		t.Errorf("fail: %+v", res)
	}
	if res := call(t, tools, "srv__echo", `{"text":5}`); !res.IsError {
		t.Errorf("echo with bad arguments: %+v", res)
	}
}

// Two subagents using one server share one process.
func TestSharedByTwoUsers(t *testing.T) {
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}})
	var wg sync.WaitGroup
	pids := make([]int, 2)
	for i := range pids {
		wg.Go(func() {
			tools, err := p.Tools(ctxT(t), []string{"srv"})
			if err != nil {
				t.Error(err)
				return
			}
			pids[i] = pidOf(t, tools)
		})
	}
	wg.Wait()
	if pids[0] == 0 || pids[0] != pids[1] {
		t.Fatalf("pids %v: want one shared process", pids)
	}
	if st := status(p, "srv"); st.Starts != 1 {
		t.Fatalf("started %d times", st.Starts)
	}
}

func TestRestartAfterKill(t *testing.T) {
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}})
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	first := pidOf(t, tools)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pool notices the exit", func() bool { return status(p, "srv").State == mcpclient.StateExited })
	eventually(t, "the killed process is reaped", func() bool { return !alive(first) })
	// The same tool values keep working: the server starts again.
	second := pidOf(t, tools)
	if second == first || !alive(second) {
		t.Fatalf("after kill: pid %d (was %d)", second, first)
	}
	if st := status(p, "srv"); st.Starts != 2 || st.State != mcpclient.StateRunning {
		t.Fatalf("after restart: %+v", st)
	}
}

// A server that exits in the middle of a call: the call is an error
// result naming the server and saying it stopped; the next call starts
// it again; Close leaves no process.
func TestCrashMidCall(t *testing.T) {
	p, err := mcpclient.New(mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	first := pidOf(t, tools)
	res := call(t, tools, "srv__die", `{}`)
	if !res.IsError || !strings.Contains(res.Output, "MCP server srv stopped during the call") || !strings.Contains(res.Output, "dies mid-call on purpose") {
		t.Fatalf("a call during which the server dies: %+v", res)
	}
	eventually(t, "the dead server is reaped", func() bool { return !alive(first) })
	second := pidOf(t, tools)
	if second == first || !alive(second) {
		t.Fatalf("after the crash: pid %d (was %d)", second, first)
	}
	if st := status(p, "srv"); st.Starts != 2 || st.State != mcpclient.StateRunning {
		t.Fatalf("after restart: %+v", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no server process after Close", func() bool { return !alive(second) })
}

func TestIdleStop(t *testing.T) {
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}, IdleTimeout: 300 * time.Millisecond})
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, tools)
	eventually(t, "idle stop", func() bool { return status(p, "srv").State == mcpclient.StateIdle })
	eventually(t, "the idle server's process is gone", func() bool { return !alive(pid) })
	// A call starts it again.
	if again := pidOf(t, tools); again == pid || !alive(again) {
		t.Fatalf("after idle stop: pid %d (was %d)", again, pid)
	}
}

// A long call keeps the server from being stopped as idle.
func TestNoIdleStopDuringCall(t *testing.T) {
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}, IdleTimeout: 100 * time.Millisecond})
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, tools)
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	for _, tl := range tools {
		if tl.Name() == "srv__slow" {
			if _, err := tl.Run(ctx, json.RawMessage(`{}`)); err == nil {
				t.Error("slow: want the caller's cancellation")
			}
		}
	}
	if !alive(pid) {
		t.Fatal("stopped as idle during a call")
	}
}

// Close stops every server with what it started: no orphan.
func TestCloseLeavesNoOrphan(t *testing.T) {
	p, err := mcpclient.New(mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "normal")}})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, tools)
	child, err := strconv.Atoi(call(t, tools, "srv__child", `{}`).Output)
	if err != nil || !alive(child) {
		t.Fatalf("child: %d %v", child, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "server and its child gone", func() bool { return !alive(pid) && !alive(child) })
	if st := status(p, "srv"); st.State != mcpclient.StateClosed {
		t.Fatalf("after close: %+v", st)
	}
	if res := call(t, tools, "srv__echo", `{"text":"x"}`); !res.IsError || !strings.Contains(res.Output, "closed") {
		t.Fatalf("a call after close: %+v", res)
	}
}

// A server that fails to start, one that lists no tools and one that
// crashes give errors naming them; the good server's tools still come.
func TestFailingServersNamed(t *testing.T) {
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{
		stdio(t, "good", "normal"), stdio(t, "empty", "empty"), stdio(t, "crashy", "crash"),
		{Name: "missing", Command: "/nonexistent/mcp-server"},
	}})
	tools, err := p.Tools(ctxT(t), []string{"missing", "empty", "good", "crashy"})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"MCP server missing", "/nonexistent/mcp-server", "MCP server empty", "lists no tools", "MCP server crashy", "crashes on purpose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if res := call(t, tools, "good__echo", `{"text":"still"}`); res.Output != "echo: still" {
		t.Errorf("good server: %+v", res)
	}
	for _, n := range names(tools) {
		if !strings.HasPrefix(n, "good__") {
			t.Errorf("tool %s of a failed server", n)
		}
	}
	if st := status(p, "missing"); st.State != mcpclient.StateFailed || !strings.Contains(st.Err, "missing") {
		t.Errorf("missing: %+v", st)
	}
	for _, n := range []string{"empty", "crashy"} {
		eventually(t, n+" leaves no process", func() bool { st := status(p, n); return st.PID == 0 })
	}
}

// A server's tool named like a spawning tool, or like spawn_subagent
// itself, is not offered; nothing is offered without the server prefix.
func TestSpawningNamesWithheld(t *testing.T) {
	forbidden := []string{"spawn_subagent", "spawn_subagents", "memory_write"}
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{stdio(t, "srv", "spawny")},
		Withhold: func(n string) string {
			if slices.Contains(forbidden, n) {
				return "subagents never spawn"
			}
			return ""
		}})
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names(tools) {
		if !strings.HasPrefix(n, "srv__") || strings.Contains(n, "spawn") || strings.Contains(n, "memory_write") {
			t.Errorf("offered %s", n)
		}
	}
	st := status(p, "srv")
	if len(st.Withheld) != 3 {
		t.Fatalf("withheld %v", st.Withheld)
	}
}

// A stdio server gets no secret of Ava's environment: only the
// allow-listed variables, HOME, TMPDIR, pass_env and env.
func TestStdioEnvironment(t *testing.T) {
	spec := stdio(t, "srv", "normal")
	spec.Env["FROM_CONFIG"] = "c"
	spec.PassEnv = []string{"PASSED_TOKEN"}
	p := newPool(t, mcpclient.Options{Servers: []mcpclient.Spec{spec},
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/ava", "ANTHROPIC_API_KEY=sk-secret", "AVA_TOKEN=tok", "PASSED_TOKEN=given"}})
	tools, err := p.Tools(ctxT(t), []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	env := call(t, tools, "srv__env", `{}`).Output
	for _, want := range []string{"FROM_CONFIG=c", "PASSED_TOKEN=given", "HOME=/home/ava", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %s:\n%s", want, env)
		}
	}
	for _, bad := range []string{"sk-secret", "AVA_TOKEN"} {
		if strings.Contains(env, bad) {
			t.Errorf("environment has %s:\n%s", bad, env)
		}
	}
}

// A URL server (streamable HTTP) on 127.0.0.1.
func TestURLServer(t *testing.T) {
	srv := testServer("url")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	if !strings.HasPrefix(ts.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s", ts.URL)
	}
	p, err := mcpclient.New(mcpclient.Options{Servers: []mcpclient.Spec{{Name: "web", URL: ts.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if st := status(p, "web"); st.State != mcpclient.StateNotStarted || st.Kind != "url" {
		t.Fatalf("before use: %+v", st)
	}
	tools, err := p.Tools(ctxT(t), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, tools, "web__echo", `{"text":"over http"}`); res.Output != "echo: over http" {
		t.Fatalf("echo: %+v", res)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

}

func TestURLMustBeLoopback(t *testing.T) {
	_, err := mcpclient.New(mcpclient.Options{Servers: []mcpclient.Spec{{Name: "remote", URL: "https://mcp.example.com/mcp"}}})
	if err == nil || !strings.Contains(err.Error(), "MCP server remote") || !strings.Contains(err.Error(), "mcp_allowed_hosts") {
		t.Fatalf("got %v", err)
	}
	p, err := mcpclient.New(mcpclient.Options{Servers: []mcpclient.Spec{{Name: "remote", URL: "https://mcp.example.com/mcp"}},
		AllowHosts: []string{"mcp.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	for _, ok := range []string{"http://localhost:1/mcp", "http://127.0.0.5:1/", "http://[::1]:8/mcp"} {
		if err := mcpspec.CheckURL(ok, nil); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1/", "file:///etc/passwd", "http://localhost.evil.com/"} {
		if err := mcpspec.CheckURL(bad, nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestToolName(t *testing.T) {
	if got := mcpclient.ToolName("fs", "read.file/x"); got != "fs__read_file_x" {
		t.Errorf("got %s", got)
	}
	if got := mcpclient.ToolName("fs", strings.Repeat("a", 100)); len(got) != 64 {
		t.Errorf("length %d", len(got))
	}
}

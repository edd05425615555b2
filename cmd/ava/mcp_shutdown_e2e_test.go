package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/gateway/client"
)

// mcpShutdownScript: BLOCKTASK subagents run until stopped, TWOSECONDS
// ones answer after two seconds.
const mcpShutdownScript = `conversations:
  - match: "BLOCKTASK"
    turns:
      - text: "never"
        delay: 1h
  - match: "TWOSECONDS"
    turns:
      - text: "two seconds done"
        delay: 2s
  - turns:
      - text: "quick done"
`

const mcpShutdownToken = "mcp-shutdown-token"

// mcpDaemon starts ava serve with the token and the script above, and
// returns it with a client of its API and the model.
func mcpDaemon(t *testing.T, confirm string, args ...string) (*daemon, *client.Client, string) {
	t.Helper()
	root := t.TempDir()
	script := filepath.Join(root, "script.yaml")
	if err := os.WriteFile(script, []byte(mcpShutdownScript), 0o600); err != nil {
		t.Fatal(err)
	}
	model := "scripted/" + script
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + filepath.Join(root, "data"),
		"AVA_WORKSPACE=" + root, "AVA_MODEL=" + model, "AVA_CONFIRM=" + confirm, "AVA_TOKEN=" + mcpShutdownToken,
		"AVA_RESUME_ATTEMPTS=0"}
	d := startDaemon(t, env, args...)
	return d, client.New(d.addr, mcpShutdownToken), model
}

// bearer adds the daemon's token to each request.
type bearer struct{ next http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+mcpShutdownToken)
	return b.next.RoundTrip(r)
}

// mcpHTTP connects the Go SDK's client to the daemon's /mcp.
func mcpHTTP(t *testing.T, d *daemon, opt *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + d.addr + "/mcp", HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, opt).Connect(bg(t), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callResult is a waited tool call's outcome.
type callResult struct {
	res *mcp.CallToolResult
	err error
	at  time.Time
}

// spawnWaited calls spawn_subagent (waited) in the background.
func spawnWaited(ctx context.Context, cs *mcp.ClientSession, model, task string) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spawn_subagent",
			Arguments: map[string]any{"role": "researcher", "task": task, "model": model}})
		out <- callResult{res, err, time.Now()}
	}()
	return out
}

// runningSubagent waits until the daemon has one subagent running and
// returns its ID.
func runningSubagent(t *testing.T, c *client.Client) string {
	t.Helper()
	for ctx := bg(t); ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		list, err := c.Subagents(ctx, client.SubagentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, sa := range list {
			if sa.Status == "running" {
				return sa.ID
			}
		}
	}
	t.Fatal("no subagent ever ran")
	return ""
}

// statusOf is a call's structured status ("" when it has none).
func statusOf(r callResult) string {
	if r.res == nil {
		return ""
	}
	sc, _ := r.res.StructuredContent.(map[string]any)
	s, _ := sc["status"].(string)
	return s
}

// TestMCPWaitedSpawnShutdownWithinGrace: a client waiting over /mcp on
// a subagent that would run for an hour does not hold ava serve past its
// grace period: the shutdown cancels the call's run, records it, answers
// the call with the run's end and exits.
func TestMCPWaitedSpawnShutdownWithinGrace(t *testing.T) {
	d, c, model := mcpDaemon(t, "never", "--grace", "2s")
	cs := mcpHTTP(t, d, nil)
	got := spawnWaited(bg(t), cs, model, "BLOCKTASK")
	id := runningSubagent(t, c)
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	var r callResult
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatalf("the waited call got no answer 15 s after SIGTERM (grace 2 s)\n%s", d.stderr)
	}
	if r.err != nil || statusOf(r) != "cancelled" || !r.res.IsError {
		t.Fatalf("waited call at shutdown: %v %+v, want the run's end (cancelled)", r.err, r.res)
	}
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("ava serve still running 15 s after SIGTERM (grace 2 s)\n%s", d.stderr)
	}
	took := time.Since(start)
	t.Logf("answered %s and exited %s after SIGTERM (grace 2 s)", r.at.Sub(start).Round(time.Millisecond), took.Round(time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("shutdown took %s with a 2 s grace", took)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.stderr)
	}
	d2 := startDaemon(t, d.env)
	sa, err := client.New(d2.addr, mcpShutdownToken).Subagent(bg(t), id)
	if err != nil || sa.Status != "cancelled" {
		t.Fatalf("the waited run after the shutdown: %+v %v, want cancelled", sa, err)
	}
}

// TestMCPWaitedResultDeliveredOnCleanShutdown: a waited subagent that
// ends within the grace period has its result delivered before the
// MCP session closes.
func TestMCPWaitedResultDeliveredOnCleanShutdown(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			d, c, model := mcpDaemon(t, "never", "--grace", "20s")
			cs := mcpHTTP(t, d, nil)
			got := spawnWaited(bg(t), cs, model, "TWOSECONDS")
			runningSubagent(t, c)
			d.cmd.Process.Signal(syscall.SIGTERM)
			var r callResult
			select {
			case r = <-got:
			case <-time.After(20 * time.Second):
				t.Fatalf("no answer\n%s", d.stderr)
			}
			if r.err != nil || statusOf(r) != "success" {
				t.Fatalf("the result of a run that ended within the grace: %v %+v\n%s", r.err, r.res, d.stderr)
			}
			if code := d.exitCode(t); code != 0 {
				t.Fatalf("exit %d\n%s", code, d.stderr)
			}
		})
	}
}

// TestMCPSessionDeleteCancelsWaitedSpawn: a client that terminates its
// session (DELETE /mcp) while a call waits gets its DELETE answered at
// once, and the call's run is cancelled and recorded.
func TestMCPSessionDeleteCancelsWaitedSpawn(t *testing.T) {
	d, c, model := mcpDaemon(t, "never")
	cs := mcpHTTP(t, d, nil)
	spawnWaited(bg(t), cs, model, "BLOCKTASK")
	id := runningSubagent(t, c)
	req, err := http.NewRequestWithContext(bg(t), http.MethodDelete, "http://"+d.addr+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Authorization", "Bearer "+mcpShutdownToken)
	start := time.Now()
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("DELETE of a session with a waited call: %v (after %s)", err, time.Since(start))
	}
	resp.Body.Close()
	t.Logf("DELETE answered %d in %s", resp.StatusCode, time.Since(start).Round(time.Millisecond))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	for ctx := bg(t); ; time.Sleep(50 * time.Millisecond) {
		sa, err := c.Subagent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if sa.Status == "cancelled" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the closed session's run: %+v, want cancelled", sa)
		}
	}
}

// TestMCPCancelledConfirmationWithdrawsProposal: a call cancelled while
// its confirmation question is open (HTTP) leaves no proposal pending.
func TestMCPCancelledConfirmationWithdrawsProposal(t *testing.T) {
	d, c, model := mcpDaemon(t, "always")
	asked, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	cs := mcpHTTP(t, d, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
	}})
	ctx, cancel := context.WithCancel(bg(t))
	got := spawnWaited(ctx, cs, model, "BLOCKTASK")
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("never asked to confirm")
	}
	if ps, err := c.Proposals(bg(t), ""); err != nil || len(ps) != 1 {
		t.Fatalf("pending while asked: %+v %v", ps, err)
	}
	cancel()
	if r := <-got; r.err == nil {
		t.Fatalf("a cancelled call returned %+v", r.res)
	}
	for wait := bg(t); ; time.Sleep(50 * time.Millisecond) {
		ps, err := c.Proposals(wait, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			break
		}
		if wait.Err() != nil {
			t.Fatalf("the cancelled call's proposal is still pending: %+v", ps)
		}
	}
	if list, err := c.Subagents(bg(t), client.SubagentFilter{}); err != nil || len(list) != 0 {
		t.Fatalf("a withdrawn proposal started something: %+v %v", list, err)
	}
}

// stdioPeer is raw JSON-RPC over `ava mcp`'s stdin and stdout.
type stdioPeer struct {
	t   *testing.T
	in  io.WriteCloser
	out chan map[string]any
}

func startStdio(t *testing.T) (*stdioPeer, string) {
	t.Helper()
	env, model := mcpEnv(t, "never")
	cmd := exec.Command(avaBin, "mcp")
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &stdioPeer{t: t, in: in, out: make(chan map[string]any, 100)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var m map[string]any
			if line[0] == '[' {
				var batch []map[string]any
				if err := json.Unmarshal(line, &batch); err != nil {
					t.Errorf("bad batch line %q", line)
				}
				m = map[string]any{"batch": batch}
			} else if err := json.Unmarshal(line, &m); err != nil {
				t.Errorf("ava mcp wrote a line that is not JSON: %q", line)
				continue
			}
			p.out <- m
		}
		close(p.out)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("ava mcp stderr:\n%s", stderr.String())
		}
	})
	return p, model
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("write %q: %v (did ava mcp exit?)", line, err)
	}
}

// next is the next message from the server, skipping notifications.
func (p *stdioPeer) next() map[string]any {
	p.t.Helper()
	for {
		select {
		case m, ok := <-p.out:
			if !ok {
				p.t.Fatal("ava mcp closed its output (it exited)")
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				continue
			}
			return m
		case <-time.After(20 * time.Second):
			p.t.Fatal("no answer from ava mcp in 20 s")
		}
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestMCPStdioBadLinesAndBatches: one malformed line, a batch or a JSON
// value that is no JSON-RPC message is answered with -32700 or -32600,
// and `ava mcp` goes on serving.
func TestMCPStdioBadLinesAndBatches(t *testing.T) {
	p, _ := startStdio(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := p.next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(`this is not json`)
	if m := p.next(); errCode(m) != -32700 || m["id"] != nil {
		t.Fatalf("a malformed line: %v, want -32700 with a null id", m)
	}
	p.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`)
	m := p.next()
	batch, _ := m["batch"].([]map[string]any)
	if len(batch) != 2 || errCode(batch[0]) != -32600 || batch[0]["id"] != 2.0 || batch[1]["id"] != 3.0 {
		t.Fatalf("a batch: %v, want -32600 for ids 2 and 3", m)
	}
	p.send(`[]`)
	if m := p.next(); errCode(m) != -32600 {
		t.Fatalf("an empty batch: %v, want -32600", m)
	}
	p.send(`{"id":4,"hello":"world"}`)
	if m := p.next(); errCode(m) != -32600 || m["id"] != 4.0 {
		t.Fatalf("an object that is no message: %v, want -32600 with id 4", m)
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	if m := p.next(); m["id"] != 5.0 || m["result"] == nil {
		t.Fatalf("tools/list after the bad lines: %v", m)
	}
}

// TestMCPStdioCancelledCallGetsNoResponse: a request the client cancels
// (notifications/cancelled) is not answered, and its run is cancelled.
func TestMCPStdioCancelledCallGetsNoResponse(t *testing.T) {
	p, model := startStdio(t)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	p.next()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"spawn","method":"tools/call","params":{"name":"spawn_subagent","arguments":{"role":"researcher","task":"BLOCKTASK","model":%q}}}`, model))
	// Wait until the run is listed as running, then cancel the call.
	var id string
	for n := 0; id == ""; n++ {
		if n > 200 {
			t.Fatal("the waited spawn never showed as running")
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_subagents","arguments":{}}}`, 100+n))
		m := p.next()
		if m["id"] == "spawn" {
			t.Fatalf("the waited spawn answered before it was cancelled: %v", m)
		}
		if text := fmt.Sprint(m["result"]); strings.Contains(text, "running") {
			if i := strings.Index(text, "S-"); i >= 0 {
				id = text[i : i+8]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"spawn","reason":"the person pressed stop"}}`)
	for n := 0; ; n++ {
		if n > 200 {
			t.Fatalf("%s never ended cancelled", id)
		}
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"subagent_status","arguments":{"subagent_id":%q}}}`, 1000+n, id))
		m := p.next()
		if m["id"] == "spawn" {
			t.Fatalf("a cancelled request was answered: %v", m)
		}
		if strings.Contains(fmt.Sprint(m["result"]), "cancelled") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Whatever the server would have sent for the cancelled call is
	// out by now: a ping's answer comes, and nothing for "spawn".
	time.Sleep(300 * time.Millisecond)
	p.send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	if m := p.next(); m["id"] != "last" {
		t.Fatalf("after the cancellation: %v, want only the ping's answer", m)
	}
}

// rawMCP posts one JSON-RPC message to the daemon's /mcp and returns
// the response (its body is the caller's to read and close).
func rawMCP(t *testing.T, ctx context.Context, addr, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+mcpShutdownToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestMCPHTTPCancelledCallGetsNoResponse: over streamable HTTP too, a
// request the client cancels is not answered (its POST's stream ends
// without a response) and its run is cancelled.
func TestMCPHTTPCancelledCallGetsNoResponse(t *testing.T) {
	d, c, model := mcpDaemon(t, "never")
	resp := rawMCP(t, bg(t), d.addr, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %s, no session", resp.Status)
	}
	resp = rawMCP(t, bg(t), d.addr, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	// The call's POST answers its headers with its first event: read it
	// aside.
	body := make(chan string, 1)
	go func() {
		req, _ := http.NewRequestWithContext(bg(t), http.MethodPost, "http://"+d.addr+"/mcp",
			strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"spawn_subagent","arguments":{"role":"researcher","task":"BLOCKTASK","model":%q}}}`, model)))
		req.Header.Set("Authorization", "Bearer "+mcpShutdownToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			body <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body <- resp.Status + "\n" + string(b)
	}()
	id := runningSubagent(t, c)
	resp = rawMCP(t, bg(t), d.addr, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the person pressed stop"}}`)
	resp.Body.Close()
	select {
	case b := <-body:
		if strings.Contains(b, `"id":7`) || strings.HasPrefix(b, "error: ") {
			t.Fatalf("a cancelled request was answered: %q", b)
		}
		t.Logf("the cancelled call's POST: %q", b)
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled call's stream never ended")
	}
	for ctx := bg(t); ; time.Sleep(50 * time.Millisecond) {
		sa, err := c.Subagent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if sa.Status == "cancelled" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the cancelled call's run: %+v, want cancelled", sa)
		}
	}
}

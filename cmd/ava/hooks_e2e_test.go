package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/hooks"
	"github.com/avaagent/ava/lifecycle"
)

// hooksScript: TWO delegates to two subagents at once (QUICK ones).
const hooksScript = `conversations:
  - match: "TWO"
    turns:
      - tool_calls:
          - {name: spawn_subagent, args: {role: researcher, task: "QUICK one", background: true}}
          - {name: spawn_subagent, args: {role: researcher, task: "QUICK two", background: true}}
      - text: "delegated"
  - match: "QUICK"
    turns:
      - text: "quick done"
        delay: 100ms
  - turns:
      - text: "noted"
`

const hookSecret = "whsec-test-0123456789"

// receiver is a webhook endpoint that verifies each request's signature
// as a receiver would and keeps the events it accepted.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	up  bool
	got []received
	bad []string
}

type received struct {
	delivery string
	event    string
	// uri is the request's path and query.
	uri  string
	body map[string]any
}

func newReceiver(t *testing.T, up bool) *receiver {
	t.Helper()
	r := &receiver{up: up}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.up {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if err := hooks.Verify(req.Header.Get(hooks.HeaderSignature), []byte(hookSecret), body, time.Now(), 5*time.Minute); err != nil {
		r.bad = append(r.bad, err.Error())
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		r.bad = append(r.bad, "not JSON: "+string(body))
	}
	r.got = append(r.got, received{delivery: req.Header.Get(hooks.HeaderDelivery), event: req.Header.Get(hooks.HeaderEvent),
		uri: req.URL.RequestURI(), body: m})
}

func (r *receiver) setUp(up bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up = up
}

func (r *receiver) events() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// hookConfig writes config.yaml hooks to data: a command appending each
// event to log, and a signed webhook to url, both hearing events, with
// the webhook's extra settings.
func hookConfig(t *testing.T, data, log, url string, events []string, webhookExtra string) {
	t.Helper()
	must(t, os.MkdirAll(data, 0o700))
	script := filepath.Join(filepath.Dir(log), "hook.sh")
	// One write per event: in a cluster two processes may run the hook
	// at once, appending to the same file.
	must(t, os.WriteFile(script, []byte("#!/bin/sh\nline=$(cat)\nprintf '%s\\n' \"$line\" >> "+log+"\n"), 0o700))
	list := "[" + strings.Join(events, ", ") + "]"
	cfg := fmt.Sprintf("hooks:\n  - events: %s\n    command: [%q]\n  - events: %s\n    url: %s\n    secret_env: AVA_TEST_HOOK_SECRET\n%s",
		list, script, list, url, webhookExtra)
	f, err := os.OpenFile(filepath.Join(data, "config.yaml"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	must(t, err)
	_, err = f.WriteString(cfg)
	must(t, err)
	must(t, f.Close())
}

// commandEvents are the events the command hook appended to log.
func commandEvents(t *testing.T, log string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("command hook got a line that is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// key names an event once: its type and what it is about.
func key(m map[string]any) string {
	id := m["jobId"]
	if id == nil {
		id = m["proposalId"]
	}
	if m["eventType"] == "session:idle" {
		id = m["timestamp"]
	}
	return fmt.Sprintf("%v %v", m["eventType"], id)
}

// onceEach fails unless every key appears once, and returns the keys.
func onceEach(t *testing.T, who string, ms []map[string]any) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range ms {
		k := key(m)
		if seen[k] {
			t.Errorf("%s got %s twice", who, k)
		}
		seen[k] = true
	}
	return seen
}

func bodies(rs []received) []map[string]any {
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = r.body
	}
	return out
}

var allHookEvents = []string{"subagent:start", "subagent:complete", "subagent:error", "subagent:aborted", "subagent:resumed",
	"session:idle", "proposal", "question"}

// TestHooksGetEveryEventOfADelegationOnce: a command hook and a signed
// webhook each get every lifecycle event of a two-subagent delegation
// (two proposals, two starts, two completions, the session going idle)
// exactly once, the same events, and the webhook's signatures verify.
func TestHooksGetEveryEventOfADelegationOnce(t *testing.T) {
	env, _ := hooksEnv(t)
	rcv := newReceiver(t, true)
	log := filepath.Join(t.TempDir(), "events.jsonl")
	hookConfig(t, envValue(env, "AVA_DATA_ROOT"), log, rcv.srv.URL, allHookEvents, "")
	d := startDaemon(t, append(env, "AVA_CONFIRM=always", "AVA_TEST_HOOK_SECRET="+hookSecret))

	turn := chatText(t, d.c, client.ChatRequest{Message: "TWO things please"})
	ps, err := d.c.Proposals(bg(t), turn.Session)
	must(t, err)
	if len(ps) != 2 {
		t.Fatalf("proposals %+v", ps)
	}
	var jobs []job
	for _, p := range ps {
		dec, err := d.c.Confirm(bg(t), p.ID, client.ConfirmRequest{Decision: client.DecisionYes})
		must(t, err)
		if dec.Decision != "confirmed" || len(dec.SubagentIDs) != 1 {
			t.Fatalf("confirm %s: %+v", p.ID, dec)
		}
		jobs = append(jobs, job{id: dec.SubagentIDs[0]})
	}
	waitAll(t, d.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	want := []string{"proposal " + ps[0].ID, "proposal " + ps[1].ID}
	for _, j := range jobs {
		want = append(want, "subagent:start "+j.id, "subagent:complete "+j.id)
	}
	has := func(seen map[string]bool) bool {
		for _, k := range want {
			if !seen[k] {
				return false
			}
		}
		return true
	}
	keys := func(ms []map[string]any) map[string]bool {
		out := map[string]bool{}
		for _, m := range ms {
			out[key(m)] = true
		}
		return out
	}
	waitFor(t, func() bool {
		return has(keys(bodies(rcv.events()))) && has(keys(commandEvents(t, log)))
	})
	time.Sleep(1500 * time.Millisecond) // a repeat would come within the poll interval
	web, cmd := onceEach(t, "the webhook", bodies(rcv.events())), onceEach(t, "the command", commandEvents(t, log))
	if !has(web) || !has(cmd) {
		t.Fatalf("missing events: webhook %v, command %v, want %v", web, cmd, want)
	}
	idle := 0
	for k := range web {
		if strings.HasPrefix(k, "session:idle") {
			idle++
		}
	}
	if idle == 0 {
		t.Errorf("no session:idle among %v", web)
	}
	if len(rcv.bad) > 0 {
		t.Errorf("requests refused by the receiver: %v", rcv.bad)
	}
	deliveries := map[string]bool{}
	for _, r := range rcv.events() {
		if deliveries[r.delivery] {
			t.Errorf("delivery %s sent twice", r.delivery)
		}
		deliveries[r.delivery] = true
		if r.event != r.body["eventType"] {
			t.Errorf("X-Ava-Event %s for a %v body", r.event, r.body["eventType"])
		}
	}
	// The body of a subagent event is the entry its session file got.
	for _, r := range rcv.events() {
		if r.event == "subagent:complete" && (r.body["type"] != "agent_event" || r.body["status"] != "success" || r.body["durationMs"] == nil) {
			t.Errorf("complete body %v", r.body)
		}
	}
	metrics := scrape(t, d)
	for name, least := range map[string]int{`ava_hook_deliveries_total{outcome="delivered"}`: len(web) + len(cmd),
		`ava_hook_deliveries{status="delivered"}`: len(web) + len(cmd), `ava_hook_deliveries_total{outcome="dead"}`: 0} {
		var n int
		_, after, ok := strings.Cut(metrics, "\n"+name+" ")
		if _, err := fmt.Sscan(after, &n); !ok || err != nil || n < least || (least == 0 && n != 0) {
			t.Errorf("/metrics: %s is %d (found %v), want at least %d", name, n, ok, least)
		}
	}
	t.Logf("webhook got %d events, command %d", len(web), len(cmd))
}

// scrape reads the daemon's /metrics.
func scrape(t *testing.T, d *daemon) string {
	t.Helper()
	req, err := http.NewRequestWithContext(bg(t), http.MethodGet, "http://"+d.addr+"/metrics", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	return string(b)
}

// TestHookDownThenBackGetsTheEventOnce: a webhook that is down when a
// run completes, and stays down while its daemon is killed, gets the
// event once after it comes back, from the next daemon on the data root.
func TestHookDownThenBackGetsTheEventOnce(t *testing.T) {
	env, rcv, d, sa := oneRunWebhookDown(t, "    attempts: 50\n    backoff: 200ms\n", "QUICK once")
	stdout := ""
	waitFor(t, func() bool {
		stdout, _, _ = avaIn(t, env, "hooks")
		return strings.Contains(stdout, "failed") && strings.Contains(stdout, "503")
	})
	kill(t, d)
	rcv.setUp(true)
	d2 := startDaemon(t, env)
	waitFor(t, func() bool { return len(rcv.events()) > 0 })
	time.Sleep(1500 * time.Millisecond)
	got := rcv.events()
	if len(got) != 1 || got[0].body["jobId"] != sa.ID || got[0].event != "subagent:complete" {
		t.Fatalf("webhook got %+v, want %s's completion once", got, sa.ID)
	}
	stdout, _, code := avaIn(t, env, "hooks")
	if code != 0 || !strings.Contains(stdout, "No delivery is waiting") {
		t.Fatalf("ava hooks after delivery (exit %d):\n%s", code, stdout)
	}
	list, err := d2.c.Hooks(bg(t), "all")
	must(t, err)
	var web []client.HookDelivery
	for _, dl := range list.Deliveries {
		if dl.Kind == "url" {
			web = append(web, dl)
		}
	}
	if len(list.Hooks) != 2 || len(web) != 1 || web[0].Status != "delivered" || web[0].Attempts < 2 || fmt.Sprint(web[0].ID) != got[0].delivery {
		t.Fatalf("GET /api/hooks: %d hooks, webhook deliveries %+v (delivery header %s)", len(list.Hooks), web, got[0].delivery)
	}
}

// TestDeadLetterRetriedByAvaHooks: a delivery whose one attempt failed
// is dead; `ava hooks` lists it, `ava hooks retry` delivers it once the
// webhook is back (no daemon running), and it is then delivered.
func TestDeadLetterRetriedByAvaHooks(t *testing.T) {
	env, rcv, d, sa := oneRunWebhookDown(t, "    attempts: 1\n", "QUICK dead")
	var stdout string
	waitFor(t, func() bool {
		stdout, _, _ = avaIn(t, env, "hooks")
		return strings.Contains(stdout, "dead")
	})
	// The daemon's API retries too; the webhook is still down.
	again, err := d.c.RetryHooks(bg(t), nil)
	must(t, err)
	if len(again) != 1 || again[0].Status != "dead" || again[0].Attempts != 1 || !strings.Contains(again[0].LastError, "503") {
		t.Fatalf("POST /api/hooks/retry while down: %+v", again)
	}
	must(t, d.cmd.Process.Signal(os.Interrupt))
	d.exitCode(t)
	rcv.setUp(true)
	stdout, stderr, code := avaIn(t, env, "hooks", "retry")
	if code != 0 || !strings.Contains(stdout, "delivered") {
		t.Fatalf("ava hooks retry: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := rcv.events(); len(got) != 1 || got[0].body["jobId"] != sa.ID {
		t.Fatalf("webhook got %+v", got)
	}
	if stdout, _, _ = avaIn(t, env, "hooks"); !strings.Contains(stdout, "No delivery is waiting") {
		t.Fatalf("after retry:\n%s", stdout)
	}
	// A test event reaches the hook, marked as a test.
	stdout, stderr, code = avaIn(t, env, "hooks", "test", "subagent:complete")
	if code != 0 || strings.Count(stdout, "ok ") != 2 {
		t.Fatalf("ava hooks test: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := rcv.events(); len(got) != 2 || got[1].body["test"] != true {
		t.Fatalf("test event %+v", got)
	}
}

// TestClusterHooksDeliverEachEventOnce: a gateway and two workers with
// the same hooks on one database: every event of twenty subagents
// reaches the webhook and the command once, not once per process.
func TestClusterHooksDeliverEachEventOnce(t *testing.T) {
	const n = 20
	cl := newCluster(t)
	rcv := newReceiver(t, true)
	log := filepath.Join(t.TempDir(), "events.jsonl")
	events := []string{"subagent:start", "subagent:complete", "session:idle"}
	procs := []*daemon{}
	for _, role := range []string{"gateway", "worker", "worker"} {
		data := filepath.Join(cl.root, fmt.Sprintf("data-%s-%d", role, cl.procs+1))
		hookConfig(t, data, log, rcv.srv.URL, events, "")
		procs = append(procs, cl.start(role, "AVA_TEST_HOOK_SECRET="+hookSecret))
	}
	gw := procs[0]
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "QUICK", n)
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	want := 2 * n
	count := func(ms []map[string]any) int {
		c := 0
		for _, m := range ms {
			if m["eventType"] != "session:idle" {
				c++
			}
		}
		return c
	}
	waitFor(t, func() bool {
		return count(bodies(rcv.events())) >= want && count(commandEvents(t, log)) >= want
	})
	time.Sleep(2 * time.Second)
	web, cmd := onceEach(t, "the webhook", bodies(rcv.events())), onceEach(t, "the command", commandEvents(t, log))
	for _, j := range jobs {
		for _, e := range []string{"subagent:start ", "subagent:complete "} {
			if !web[e+j.id] || !cmd[e+j.id] {
				t.Errorf("%s%s: webhook %v, command %v", e, j.id, web[e+j.id], cmd[e+j.id])
			}
		}
	}
	if c := count(bodies(rcv.events())); c != want {
		t.Errorf("webhook got %d subagent events, want %d", c, want)
	}
}

// oneRunWebhookDown starts a daemon whose webhook (with extra settings)
// hears subagent:complete and is down, and runs one subagent of task to
// its end.
func oneRunWebhookDown(t *testing.T, extra, task string) ([]string, *receiver, *daemon, client.Subagent) {
	t.Helper()
	return oneRunWebhookDownAt(t, extra, task, "")
}

// oneRunWebhookDownAt is oneRunWebhookDown with the webhook at path (and
// query) on the receiver.
func oneRunWebhookDownAt(t *testing.T, extra, task, path string) ([]string, *receiver, *daemon, client.Subagent) {
	t.Helper()
	env, _ := hooksEnv(t)
	rcv := newReceiver(t, false)
	log := filepath.Join(t.TempDir(), "events.jsonl")
	hookConfig(t, envValue(env, "AVA_DATA_ROOT"), log, rcv.srv.URL+path, []string{"subagent:complete"}, extra)
	env = append(env, "AVA_TEST_HOOK_SECRET="+hookSecret)
	d := startDaemon(t, env)
	first := chatText(t, d.c, client.ChatRequest{Message: "hello"})
	sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: task, Model: spawnModel, Parent: first.Session})
	must(t, err)
	waitAll(t, d.c, []job{{id: sa.ID}}, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	return env, rcv, d, sa
}

// hooksEnv is daemonEnv with the hooks script.
func hooksEnv(t *testing.T) ([]string, string) {
	t.Helper()
	root := t.TempDir()
	script := filepath.Join(root, "script.yaml")
	must(t, os.WriteFile(script, []byte(hooksScript), 0o600))
	model := "scripted/" + script
	data := filepath.Join(root, "data")
	operatorSubagentScript(t, data, script)
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + data,
		"AVA_WORKSPACE=" + root, "AVA_MODEL=" + model, "AVA_CONFIRM=never"}, model
}

// avaIn runs the binary with exactly env.
func avaIn(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(avaBin, args...)
	cmd.Env = env
	return runCmd(t, cmd)
}

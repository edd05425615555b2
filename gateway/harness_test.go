package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway"
	"github.com/avaagent/ava/gateway/client"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script drives the orchestrator and the subagents of the tests. The
// first user message (or the system prompt) picks the conversation.
const script = `conversations:
  - match: "BLOCKTASK"
    turns:
      - text: "never"
        delay: 1h
      - text: "follow-up answered"
  - match: "SLOW"
    turns:
      - text: "slow done"
        delay: 700ms
      - text: "queued answered"
  - match: "SPAWNBG"
    turns:
      - text: "starting a background subagent"
        tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: "BLOCKTASK child", model: "MODEL", background: true}
      - text: "parent done"
  - match: "GROUPTWO"
    turns:
      - tool_calls:
          - name: spawn_subagents
            args: {mode: parallel, tasks: [{role: researcher, task: "first half", model: "MODEL"}, {role: researcher, task: "second half", model: "MODEL"}]}
        usage: {input: 300, output: 20}
      - text: "group done"
        usage: {input: 400, output: 30}
  - match: "specialized .* subagent"
    turns:
      - text: "subagent answer"
        usage: {input: 100, output: 10}
  - turns:
      - text: "hello back"
      - text: "second answer"
      - text: "third answer"
`

// env is a server over a real instance (SQLite in a temp dir, the
// scripted model) on a real loopback listener.
type env struct {
	t     *testing.T
	token string
	rt    *ava.Runtime
	// in is what lies beneath the runtime, for tests that reach it.
	in  *app.Instance
	srv *gateway.Server
	ts  *httptest.Server
	c   *client.Client
	// model is the orchestrator's model (AVA_MODEL) and what a
	// subagent's resolves to; spawnModel is what a client names.
	model  string
	cancel context.CancelFunc
}

type envOptions struct {
	// token is the daemon's token (default testToken).
	token string
	// timeouts are the server's (zero: the defaults).
	timeouts  gateway.Timeouts
	heartbeat time.Duration
	// script replaces the default script (MODEL stands for the model).
	script string
	// merge is AVA_MERGE_WINDOW (default "0": off, so that a second
	// message to a busy session is refused or queued).
	merge string
	// wrap, when set, wraps the server's handler (to break connections).
	wrap func(http.Handler) http.Handler
	// listen, when set, wraps the server's listener (to watch its
	// connections).
	listen func(net.Listener) net.Listener
	// confirm is AVA_CONFIRM (default never: most tests spawn directly).
	confirm string
	// env adds settings; roles are role files (name → text) written to
	// the data root's agents/.
	env   map[string]string
	roles map[string]string
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "script.yaml")
	model := "scripted/" + path
	text := script
	if o.script != "" {
		text = o.script
	}
	// MODEL in a script is what a client or the orchestrator names: an
	// alias config.yaml maps to the script (only the operator may name a
	// scripted model by its path).
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "MODEL", spawnModel)), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, text := range o.roles {
		must(t, os.MkdirAll(filepath.Join(root, "agents"), 0o700))
		must(t, os.WriteFile(filepath.Join(root, "agents", name), []byte(text), 0o600))
	}
	cfg, err := config.Load(func(k string) string {
		if v, ok := o.env[k]; ok {
			return v
		}
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_MODEL": model,
			"AVA_MAX_CONCURRENT_SUBAGENTS": "10", "AVA_CONFIRM": orNever(o.confirm), "AVA_MERGE_WINDOW": cmpOr(o.merge, "0")}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Aliases = scriptAliases(cfg.Aliases, path)
	log := slog.New(slog.DiscardHandler)
	metrics := gateway.NewMetrics()
	rt, err := ava.Open(context.Background(), ava.Options{Config: cfg, Logger: log, Sinks: []event.Sink{metrics}})
	if err != nil {
		t.Fatal(err)
	}
	in := rt.Instance()
	ts := httptest.NewUnstartedServer(nil)
	o.token = cmpOr(o.token, testToken)
	srv, err := gateway.New(gateway.Options{Runtime: rt, Addr: ts.Listener.Addr().String(), Token: o.token,
		Heartbeat: o.heartbeat, Metrics: metrics, Logger: log, Timeouts: o.timeouts})
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	ts.Config = srv.HTTPServer() // the daemon's timeouts
	ts.Config.Handler = srv.Handler()
	if o.wrap != nil {
		ts.Config.Handler = o.wrap(srv.Handler())
	}
	if o.listen != nil {
		ts.Listener = o.listen(ts.Listener)
	}
	ts.Start()
	e := &env{t: t, token: o.token, rt: rt, in: in, srv: srv, ts: ts, c: client.New(ts.URL, o.token), model: model}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		srv.Drain(ctx) // ends the open streams at once
		cancel()
		ts.CloseClientConnections()
		ts.Close()
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// testToken is the daemon's token in the tests that do not choose one.
const testToken = "test-token-0123456789abcdef"

// loginURL is a one-time link that logs a browser in.
func (e *env) loginURL() string {
	e.t.Helper()
	link, err := e.srv.LoginLink()
	if err != nil {
		e.t.Fatal(err)
	}
	return link
}

// authorize adds the daemon's token to req.
func (e *env) authorize(req *http.Request) *http.Request {
	req.Header.Set("Authorization", "Bearer "+e.token)
	return req
}

// do sends a request and returns the status and body. It carries the
// token unless hdr has an Authorization entry (empty: none).
func (e *env) do(method, path, body string, hdr map[string]string) (int, string) {
	e.t.Helper()
	resp, b := e.doFull(method, path, body, hdr)
	return resp.StatusCode, b
}

// doFull is do returning the whole response (its body read and closed).
func (e *env) doFull(method, path, body string, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if _, ok := hdr["Authorization"]; !ok {
		e.authorize(req)
	}
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "" && k == "Authorization":
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// wantError checks an error response: its status and a JSON error
// mentioning want.
func wantError(t *testing.T, code int, body string, wantCode int, want string) {
	t.Helper()
	var eb client.ErrorBody
	if code != wantCode || json.Unmarshal([]byte(body), &eb) != nil || !strings.Contains(eb.Error, want) {
		t.Fatalf("got %d %s, want %d with an error mentioning %q", code, body, wantCode, want)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// chat sends a message and reads its stream to the done event.
func (e *env) chat(req client.ChatRequest) (client.ChatStart, []client.Event, client.TurnResult) {
	e.t.Helper()
	st, err := e.c.Chat(ctx(e.t), req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	var start client.ChatStart
	var evs []client.Event
	for {
		ev, err := st.Next()
		if err != nil {
			e.t.Fatalf("stream of %s: %v after %d events", req.SessionKey, err, len(evs))
		}
		switch ev.Type {
		case client.EventSession:
			must(e.t, json.Unmarshal(ev.Data, &start))
		case client.EventDone:
			var r client.TurnResult
			must(e.t, json.Unmarshal(ev.Data, &r))
			// The stream ends after done: read to its end, so that the
			// request is over (and counted in the metrics) on return.
			if _, err := st.Next(); err == nil {
				e.t.Fatalf("an event after done in %s", req.SessionKey)
			}
			return start, evs, r
		default:
			evs = append(evs, ev)
		}
	}
}

// spawnBlocking starts a subagent that blocks until stopped.
func (e *env) spawnBlocking(parent string) client.Subagent {
	e.t.Helper()
	sa, _, err := e.c.Spawn(ctx(e.t), client.SpawnRequest{Role: "researcher", Task: "BLOCKTASK", Model: spawnModel, Parent: parent})
	if err != nil {
		e.t.Fatal(err)
	}
	return sa
}

// until reads st until an event satisfies stop, returning every kept
// event read (in order).
func until(t *testing.T, st *client.Stream, stop func(client.Event) bool) []client.Event {
	t.Helper()
	var kept []client.Event
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream: %v after %d kept events", err, len(kept))
		}
		if ev.ID > 0 {
			kept = append(kept, ev)
		}
		if stop(ev) {
			return kept
		}
	}
}

func isType(typ string) func(client.Event) bool {
	return func(ev client.Event) bool { return ev.Type == typ }
}

// checkSeqs fails unless evs are numbered from first with no hole and
// no repeat.
func checkSeqs(t *testing.T, evs []client.Event, first uint64) {
	t.Helper()
	for i, ev := range evs {
		if ev.ID != first+uint64(i) {
			t.Fatalf("event %d has id %d, want %d (ids %v)", i, ev.ID, first+uint64(i), ids(evs))
		}
	}
}

func ids(evs []client.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func jsonBody(v any) string {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		panic(fmt.Sprint(err))
	}
	return b.String()
}

// orNever is the AVA_CONFIRM a test runs with: never unless it says.
func orNever(policy string) string {
	if policy == "" {
		return "never"
	}
	return policy
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// spawnModel is the model name the tests' clients and scripts give a
// spawn: the scripted provider's alias, which config.yaml maps to the
// test's script (scriptAliases).
const spawnModel = "scripted/sonnet"

// scriptAliases maps the scripted provider's aliases to the script at
// path, as an operator's config.yaml may.
func scriptAliases(a map[string]map[string]string, path string) map[string]map[string]string {
	if a == nil {
		a = map[string]map[string]string{}
	}
	a["scripted"] = map[string]string{"haiku": path, "sonnet": path, "opus": path}
	return a
}

package subagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		serveFakeModel()
		return
	}
	goleak.VerifyTestMain(m)
}

// fakeServerEnv makes the test binary run only a fake model server (for
// benchmarks that must not count the server's memory): it prints the URL
// and serves until its stdin closes. The value is the answer's latency.
const fakeServerEnv = "AVA_TEST_FAKE_MODEL_LATENCY"

// fakeToolStepEnv makes that server ask for one tool call (read_file)
// before it answers: each run then has one step that asks for tools (a
// checkpoint) before its final answer.
const fakeToolStepEnv = "AVA_TEST_FAKE_MODEL_TOOL_STEP"

func serveFakeModel() {
	latency, _ := time.ParseDuration(os.Getenv(fakeServerEnv))
	fake := llmfake.NewOpenAI(nil)
	toolStep := os.Getenv(fakeToolStepEnv) != ""
	fake.Respond = func(req llmfake.Request) llmfake.Turn {
		if toolStep && !bytes.Contains(req.Raw, []byte(`"role":"tool"`)) {
			return llmfake.Turn{ToolCalls: []llmfake.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"x"}`}},
				Delay: latency, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}
		}
		return llmfake.Turn{Text: "done", Delay: latency, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}
	}
	fmt.Println(fake.URL)
	io.Copy(io.Discard, os.Stdin)
	fake.Close()
}

// builtinNames are the tools the built-in roles name.
var builtinNames = []string{"web_search", "http_get", "read_webpages", "python_exec", "memory_read", "memory_write",
	"read_file", "search_codebase", "search_and_read", "run_bash"}

// named is a tool that answers with its own name.
type named string

func (n named) Name() string            { return string(n) }
func (n named) Description() string     { return "test tool " + string(n) }
func (n named) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (n named) Run(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: "ran " + string(n)}, nil
}

// recorder wraps a provider and records every request; called receives
// a value as each call starts.
type recorder struct {
	llm.Provider
	mu     sync.Mutex
	reqs   []*llm.Request
	called chan struct{}
}

func (r *recorder) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	select {
	case r.called <- struct{}{}:
	default:
	}
	return r.Provider.Stream(ctx, req, on)
}

// waitCall waits for the next model call to start. A run's record is
// written before its first call (Handle.recordRun), so after a run's
// first call it is stored as running.
func (r *recorder) waitCall(t *testing.T) {
	t.Helper()
	select {
	case <-r.called:
	case <-time.After(20 * time.Second):
		t.Fatal("no model call started")
	}
}

func (r *recorder) requests() []*llm.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*llm.Request(nil), r.reqs...)
}

type harness struct {
	m     *subagent.Manager
	store *sqlite.Store
	hub   *event.Hub
	model *recorder
	root  string
	opts  subagent.Options
}

// newHarness builds a manager on real SQLite with the given script as
// every alias's model. Extra tools are added to the test tools.
func newHarness(t testing.TB, script string, adjust func(*subagent.Options), extra ...tool.Tool) *harness {
	t.Helper()
	s, err := scripted.Parse("test", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// The store shares the manager's clock when a test gives one, so
	// that expiry is checked against the same time.
	var clock func() time.Time
	st, err := sqlite.Open(context.Background(), root+"/ava.db", sqlite.Options{Now: func() time.Time {
		if clock != nil {
			return clock()
		}
		return time.Now()
	}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Provider: scripted.NewWithScript(s), called: make(chan struct{}, 1024)}
	// 0.01¢ a token: a scripted call of 100 input and 10 output tokens
	// costs 1.1¢, and a first request (~750 tokens by the loop's
	// estimate) fits a 50¢ cap.
	cat := llm.NewCatalog(llm.Prices{"t": {Input: 10_000, Output: 10_000}})
	cat.Add(rec, map[string]string{"haiku": "t", "sonnet": "t", "opus": "t"})
	var tools []tool.Tool
	have := map[string]bool{}
	for _, e := range extra {
		tools = append(tools, e)
		have[e.Name()] = true
	}
	for _, n := range builtinNames {
		if !have[n] {
			tools = append(tools, named(n))
		}
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := audit.NewSessionLogs(root, audit.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hub := event.NewHub(st, logs)
	owner, err := instance.Start(context.Background(), instance.Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	opts := subagent.Options{Catalog: cat, Tools: reg, Store: st, Hub: hub, MaxConcurrent: 3, StallAfter: -1, Workspace: root,
		Logger: slog.New(slog.DiscardHandler), Owner: owner}
	if adjust != nil {
		adjust(&opts)
	}
	clock = opts.Clock
	m := subagent.NewManager(opts)
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		owner.Close()
		st.Close()
	})
	return &harness{m: m, store: st, hub: hub, model: rec, root: root, opts: opts}
}

var parent = tool.Caller{AgentID: "ava", SessionKey: "ava:test:main"}

func (h *harness) spawn(t *testing.T, cfg subagent.Config) *subagent.Handle {
	t.Helper()
	hd, err := h.m.Spawn(context.Background(), subagent.Request{Config: cfg, Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	return hd
}

func wait(t *testing.T, hd *subagent.Handle) subagent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := hd.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sessionFiles opens the data root's session files, the hub sink that
// writes lifecycle entries (what a second process's hub has).
func sessionFiles(t *testing.T, root string) *audit.SessionLogs {
	t.Helper()
	logs, err := audit.NewSessionLogs(root, audit.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

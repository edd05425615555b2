package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// providerFunc is a Provider backed by a function.
type providerFunc func(ctx context.Context, req *llm.Request) (*llm.Response, error)

func (f providerFunc) Name() string { return "test" }
func (f providerFunc) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	return f(ctx, req)
}

// alwaysTools is a model that always asks for the echo tool.
func alwaysTools(usage llm.Usage) providerFunc {
	return func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return &llm.Response{Usage: usage, StopReason: llm.StopToolUse, Message: llm.Message{Role: llm.RoleAssistant,
			Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c", ToolName: "echo", Input: json.RawMessage(`{"text":"x"}`)}}}}, nil
	}
}

type echoArgs struct {
	Text string `json:"text"`
}

func echoTool() tool.Tool {
	return tool.NewFunc("echo", "Echo the text back.", func(ctx context.Context, a echoArgs) (tool.Result, error) {
		return tool.Result{Output: "echo: " + a.Text}, nil
	})
}

func registry(t *testing.T, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	r, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recorder is a Publisher keeping events in memory.
type recorder struct {
	mu  sync.Mutex
	evs []event.Event
	err error
}

func (r *recorder) Publish(ev event.Event) (event.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	return ev, r.err
}

func (r *recorder) types() []event.Type {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Type
	for _, e := range r.evs {
		if e.Type.IsAudit() {
			out = append(out, e.Type)
		}
	}
	return out
}

func run(t *testing.T, cfg agent.Config, ctx context.Context) agent.Result {
	t.Helper()
	if cfg.Caller.SessionKey == "" {
		cfg.Caller = tool.Caller{AgentID: "ava", SessionKey: "ava:test:1"}
	}
	return agent.New(cfg).Run(ctx, nil, llm.UserText("go"))
}

func TestToolRoundTripAndEvents(t *testing.T) {
	s, err := scripted.Parse("t", []byte(`
turns:
  - text: "calling"
    tool_calls: [{name: echo, args: {text: hi}}]
  - text: "done: {{last_result}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Tools: registry(t, echoTool()), Publisher: rec}, context.Background())
	if res.Status != lifecycle.Success || res.Text != "done: echo: hi" || res.Iterations != 2 {
		t.Fatalf("got %+v", res)
	}
	want := []event.Type{event.UserMessage, event.CostUpdate, event.AssistantMessage, event.ToolCall, event.ToolResult, event.CostUpdate, event.AssistantMessage}
	if got := rec.types(); !equalTypes(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func equalTypes(a, b []event.Type) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBrokenToolCallsGoBackToModel(t *testing.T) {
	s, err := scripted.Parse("t", []byte(`
turns:
  - tool_calls:
      - {name: nosuch, args: {}}
      - {name: echo, raw_args: "{not json"}
      - {name: echo, args: {text: 5}}
      - {name: boom}
  - text: ok
`))
	if err != nil {
		t.Fatal(err)
	}
	boom := tool.NewFunc("boom", "Panics.", func(ctx context.Context, a struct{}) (tool.Result, error) { panic("kaboom") })
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Tools: registry(t, echoTool(), boom)}, context.Background())
	if res.Status != lifecycle.Success {
		t.Fatalf("status %s (%v)", res.Status, res.Err)
	}
	results := res.Messages[2].Content
	wants := []string{`unknown tool "nosuch"`, "not valid JSON", "invalid arguments for echo", "failed internally: kaboom"}
	for i, w := range wants {
		if !results[i].IsError || !strings.Contains(results[i].Content, w) {
			t.Errorf("result %d = %+v, want error containing %q", i, results[i], w)
		}
	}
}

func TestParallelToolCallsRunConcurrently(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	barrier := tool.NewFunc("barrier", "Waits for its twin.", func(ctx context.Context, a struct{}) (tool.Result, error) {
		arrived.Done()
		done := make(chan struct{})
		go func() { arrived.Wait(); close(done) }()
		select {
		case <-done:
			return tool.Result{Output: "met"}, nil
		case <-time.After(5 * time.Second):
			return tool.Errorf("twin never came: calls ran one after another"), nil
		}
	})
	s, _ := scripted.Parse("t", []byte("turns:\n  - tool_calls: [{name: barrier}, {name: barrier}]\n  - text: ok\n"))
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Tools: registry(t, barrier)}, context.Background())
	for _, b := range res.Messages[2].Content {
		if b.IsError {
			t.Fatal(b.Content)
		}
	}
}

func TestLimits(t *testing.T) {
	slow := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	cases := []struct {
		name   string
		model  llm.Model
		limits agent.Limits
		want   lifecycle.Status
	}{
		{"timeout", llm.Model{Provider: slow, ID: "m"}, agent.Limits{Timeout: 50 * time.Millisecond}, lifecycle.Timeout},
		{"cost", llm.Model{Provider: alwaysTools(llm.Usage{InputTokens: 1000}), ID: "m", Price: llm.Price{Input: 1000, Output: 1000}, Priced: true}, agent.Limits{MaxCostCents: 2.5}, lifecycle.CostExceeded},
		{"tokens", llm.Model{Provider: alwaysTools(llm.Usage{InputTokens: 100, OutputTokens: 10}), ID: "m"}, agent.Limits{MaxTokens: 500}, lifecycle.TokensExceeded},
		{"iterations", llm.Model{Provider: alwaysTools(llm.Usage{}), ID: "m"}, agent.Limits{MaxIterations: 4}, lifecycle.IterationsExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, agent.Config{Model: c.model, Tools: registry(t, echoTool()), Limits: c.limits}, context.Background())
			if res.Status != c.want {
				t.Fatalf("status %s (%v), want %s", res.Status, res.Err, c.want)
			}
			if c.name == "iterations" && res.Iterations != 4 {
				t.Fatalf("iterations %d, want 4", res.Iterations)
			}
			if c.name == "cost" && res.CostCents != 2 {
				t.Fatalf("cost %.2f¢: the cap must stop the run before the call that would cross it (1¢ a call, 2.5¢ cap)", res.CostCents)
			}
		})
	}
}

func TestCancelStopsModelAndTools(t *testing.T) {
	started := make(chan struct{})
	var stopped atomic.Bool
	hang := tool.NewFunc("hang", "Blocks until cancelled.", func(ctx context.Context, a struct{}) (tool.Result, error) {
		close(started)
		<-ctx.Done()
		stopped.Store(true)
		return tool.Result{}, ctx.Err()
	})
	s, _ := scripted.Parse("t", []byte("turns:\n  - tool_calls: [{name: hang}]\n"))
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-started; cancel(agent.ErrCancelled) }()
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Tools: registry(t, hang)}, ctx)
	if res.Status != lifecycle.Cancelled || !stopped.Load() {
		t.Fatalf("status %s, tool stopped %v", res.Status, stopped.Load())
	}
}

func TestPublishFailureEndsRun(t *testing.T) {
	rec := &recorder{err: errors.New("disk full")}
	s, _ := scripted.Parse("t", []byte("turns:\n  - text: hi\n"))
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Publisher: rec}, context.Background())
	if res.Status != lifecycle.Error || !strings.Contains(res.Err.Error(), "disk full") {
		t.Fatalf("status %s err %v", res.Status, res.Err)
	}
}

// failingLog is an event log whose disk is full.
type failingLog struct{ *event.MemoryLog }

func (failingLog) AppendEvents(context.Context, []event.Event) error { return errors.New("disk full") }

// Through the hub the loop publishes without waiting; a store that
// refuses its events still ends the run with an error, and the events
// reach no subscriber.
func TestAsyncPublishFailureEndsRun(t *testing.T) {
	hub := event.NewHub(failingLog{event.NewMemoryLog()})
	sub := hub.Subscribe("ava:test:async", 0)
	defer sub.Close()
	s, _ := scripted.Parse("t", []byte("turns:\n  - text: hi\n"))
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Publisher: hub,
		Caller: tool.Caller{AgentID: "ava", SessionKey: "ava:test:async"}}, context.Background())
	if res.Status != lifecycle.Error || !strings.Contains(res.Err.Error(), "disk full") {
		t.Fatalf("status %s err %v", res.Status, res.Err)
	}
	if evs, _ := sub.Poll(context.Background()); len(evs) != 0 {
		for _, ev := range evs {
			if ev.Type.Kept() {
				t.Fatalf("an unstored event was delivered: %v", ev)
			}
		}
	}
}

func TestModelErrorIsStatusError(t *testing.T) {
	s, _ := scripted.Parse("t", []byte("turns:\n  - error: overloaded\n"))
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}}, context.Background())
	if res.Status != lifecycle.Error || !errors.Is(res.Err, scripted.ErrScripted) {
		t.Fatalf("status %s err %v", res.Status, res.Err)
	}
}

func TestSnapshotTracksProgress(t *testing.T) {
	s, _ := scripted.Parse("t", []byte("turns:\n  - tool_calls: [{name: echo, args: {text: a}}]\n    usage: {input: 10, output: 5}\n  - text: ok\n    usage: {input: 20, output: 5}\n"))
	a := agent.New(agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Tools: registry(t, echoTool()), Caller: tool.Caller{SessionKey: "k", AgentID: "ava"}})
	a.Run(context.Background(), nil, llm.UserText("go"))
	snap := a.Snapshot()
	if snap.Tokens != 40 || snap.Iteration != 2 || snap.LastTool != "echo" || snap.Status != lifecycle.Success {
		t.Fatalf("snapshot %+v", snap)
	}
}

func TestOutputCappedAtWhatIsLeftOfTheTokenCap(t *testing.T) {
	var caps []int
	p := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		caps = append(caps, req.MaxTokens)
		return alwaysTools(llm.Usage{InputTokens: 300, OutputTokens: 100})(ctx, req)
	})
	res := run(t, agent.Config{Model: llm.Model{Provider: p, ID: "m"}, Tools: registry(t, echoTool()), MaxOutputTokens: 4096,
		Limits: agent.Limits{MaxTokens: 1000}}, context.Background())
	if res.Status != lifecycle.TokensExceeded || len(caps) != 3 || caps[0] != 1000 || caps[1] != 600 || caps[2] != 200 {
		t.Fatalf("status %s caps %v", res.Status, caps)
	}
}

func TestLargeTokenCapLeavesTheProviderDefault(t *testing.T) {
	var caps []int
	p := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		caps = append(caps, req.MaxTokens)
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("ok")}}}, nil
	})
	run(t, agent.Config{Model: llm.Model{Provider: p, ID: "m"}, Limits: agent.Limits{MaxTokens: 100_000}}, context.Background())
	if len(caps) != 1 || caps[0] != 0 {
		t.Fatalf("caps %v: a 100k token cap must not become a 100k output request", caps)
	}
}

// TestCheckpointAfterEachStep: the hook sees each step's model response
// before its tools run, then the step's results, and no call for the
// final answer (the run's end records it); a failing checkpoint ends the
// run before the tool runs.
func TestCheckpointAfterEachStep(t *testing.T) {
	s, err := scripted.Parse("t", []byte(`
turns:
  - tool_calls: [{name: echo, args: {text: one}}]
  - tool_calls: [{name: echo, args: {text: two}}]
  - text: "done"
`))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	counting := tool.NewFunc("echo", "Echo the text back.", func(ctx context.Context, a echoArgs) (tool.Result, error) {
		ran.Add(1)
		return tool.Result{Output: "echo: " + a.Text}, nil
	})
	type seen struct {
		n       int
		pending bool
		iter    int
		last    llm.Role
	}
	var got []seen
	cfg := agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Tools: registry(t, counting),
		Checkpoint: func(cp agent.Checkpoint) error {
			got = append(got, seen{len(cp.Messages), cp.ToolsPending, cp.Iterations, cp.Messages[len(cp.Messages)-1].Role})
			return nil
		}}
	res := run(t, cfg, context.Background())
	if res.Status != lifecycle.Success || len(res.Messages) != 6 {
		t.Fatalf("got %+v", res)
	}
	want := []seen{{2, true, 1, llm.RoleAssistant}, {3, false, 1, llm.RoleUser}, {4, true, 2, llm.RoleAssistant}, {5, false, 2, llm.RoleUser}}
	if len(got) != len(want) {
		t.Fatalf("checkpoints %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("checkpoint %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	s2, _ := scripted.Parse("t", []byte("turns:\n  - tool_calls: [{name: echo, args: {text: one}}]\n  - text: never\n"))
	ran.Store(0)
	cfg.Model = llm.Model{Provider: scripted.NewWithScript(s2), ID: "x"}
	cfg.Checkpoint = func(agent.Checkpoint) error { return errors.New("disk full") }
	res = run(t, cfg, context.Background())
	if res.Status != lifecycle.Error || ran.Load() != 0 || !strings.Contains(res.Err.Error(), "disk full") {
		t.Fatalf("failing checkpoint: status %s, tool ran %d times, err %v", res.Status, ran.Load(), res.Err)
	}
}

// A final answer that crosses the token cap (its input is not bounded
// ahead) ends with the token cap's status and keeps its text; one that
// stays at the cap exactly is success (issue 40 item 2).
func TestFinalAnswerOverTheTokenCapIsNotSuccess(t *testing.T) {
	for _, tc := range []struct {
		input int
		want  lifecycle.Status
	}{{990, lifecycle.Success}, {991, lifecycle.TokensExceeded}} {
		p := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			return &llm.Response{Usage: llm.Usage{InputTokens: tc.input, OutputTokens: 10}, StopReason: llm.StopEndTurn,
				Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("answer")}}}, nil
		})
		res := run(t, agent.Config{Model: llm.Model{Provider: p, ID: "m"}, Limits: agent.Limits{MaxTokens: 1000}}, context.Background())
		if res.Status != tc.want || res.Text != "answer" {
			t.Fatalf("%d+10 tokens on a 1000 cap: status %s text %q (%v), want %s with the text", tc.input, res.Status, res.Text, res.Err, tc.want)
		}
	}
}

package agent_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
	"github.com/avaagent/ava/llm/scripted"
)

// asyncRecorder is an AsyncPublisher that records what it is handed,
// in order, and settles each event at once.
type asyncRecorder struct {
	mu  sync.Mutex
	evs []event.Event
}

func (r *asyncRecorder) Publish(ev event.Event) (event.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	return ev, nil
}

func (r *asyncRecorder) PublishAsync(ev event.Event, done func(event.Event, error)) {
	r.Publish(ev)
	if done != nil {
		done(ev, nil)
	}
}

func (r *asyncRecorder) types() []event.Type {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ts []event.Type
	for _, ev := range r.evs {
		ts = append(ts, ev.Type)
	}
	return ts
}

// peekProvider runs before ahead of each call of the provider it wraps.
type peekProvider struct {
	llm.Provider
	before func()
}

func (p peekProvider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	p.before()
	return p.Provider.Stream(ctx, req, onDelta)
}

// The events a run emits before its first model request (the user
// message, the activity) are held while the request is being made, then
// published in order ahead of the rest, and Started is called once.
func TestFirstEventsWaitForTheFirstRequest(t *testing.T) {
	s, _ := scripted.Parse("t", []byte("turns:\n  - text: hi\n"))
	rec := &asyncRecorder{}
	var atCall []event.Type
	var started atomic.Int32
	p := peekProvider{Provider: scripted.NewWithScript(s), before: func() { atCall = rec.types() }}
	res := run(t, agent.Config{Model: llm.Model{Provider: p, ID: "x"}, Publisher: rec,
		Started: func() { started.Add(1) }}, context.Background())
	if res.Status != lifecycle.Success {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	if len(atCall) != 0 {
		t.Errorf("published before the first request: %v", atCall)
	}
	ts := rec.types()
	if len(ts) < 2 || ts[0] != event.UserMessage || ts[1] != event.Activity {
		t.Errorf("events %v, want the user message and the activity first", ts)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("Started called %d times, want once", n)
	}
}

// Over HTTP the held events go out, and Started is called, once the
// request is written: before the model answers.
func TestFirstEventsGoOutOnceTheRequestIsWritten(t *testing.T) {
	startedCh := make(chan struct{})
	var once sync.Once
	fake := llmfake.NewOpenAI(t)
	var early []event.Type
	rec := &asyncRecorder{}
	fake.Respond = func(llmfake.Request) llmfake.Turn {
		select {
		case <-startedCh:
		case <-time.After(10 * time.Second):
			t.Error("Started not called while the model was answering")
		}
		early = rec.types()
		return llmfake.Turn{Text: "done"}
	}
	p, err := openai.New(openai.Config{APIKey: "k", BaseURL: fake.URL + "/v1", HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, agent.Config{Model: llm.Model{Provider: p, ID: "gpt-4.1"}, Publisher: rec,
		Started: func() { once.Do(func() { close(startedCh) }) }}, context.Background())
	if res.Status != lifecycle.Success {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	if len(early) < 1 || early[0] != event.UserMessage {
		t.Errorf("published while the model answered: %v, want the user message", early)
	}
}

// A provider that is no HTTP client still has the held events go out
// while its call runs, a few milliseconds in, not at its end.
func TestFirstEventsGoOutDuringALongCall(t *testing.T) {
	s, _ := scripted.Parse("t", []byte("turns:\n  - text: hi\n"))
	rec := &asyncRecorder{}
	startedCh := make(chan struct{})
	var once sync.Once
	var during []event.Type
	p := waitProvider{Provider: scripted.NewWithScript(s), wait: func() {
		select {
		case <-startedCh:
		case <-time.After(10 * time.Second):
			t.Error("Started not called during the call")
		}
		during = rec.types()
	}}
	res := run(t, agent.Config{Model: llm.Model{Provider: p, ID: "x"}, Publisher: rec,
		Started: func() { once.Do(func() { close(startedCh) }) }}, context.Background())
	if res.Status != lifecycle.Success {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	if len(during) < 1 || during[0] != event.UserMessage {
		t.Errorf("published during the call: %v, want the user message first", during)
	}
}

// waitProvider runs wait inside each call, before the provider it wraps
// answers.
type waitProvider struct {
	llm.Provider
	wait func()
}

func (p waitProvider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	p.wait()
	return p.Provider.Stream(ctx, req, onDelta)
}

// What comes before a run's first call (here an instance hold that takes
// a second) does not keep its first events, and Started, back for long:
// a parent waits for the spawn to be announced.
func TestFirstEventsGoOutDuringASlowStart(t *testing.T) {
	s, _ := scripted.Parse("t", []byte("turns:\n  - text: hi\n"))
	rec := &asyncRecorder{}
	started := make(chan time.Time, 1)
	begin := time.Now()
	hold := func(ctx context.Context) error {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return nil
	}
	res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "x"}, Publisher: rec, Hold: hold,
		Started: func() { started <- time.Now() }}, context.Background())
	if res.Status != lifecycle.Success {
		t.Fatalf("status %s: %v", res.Status, res.Err)
	}
	if at := (<-started).Sub(begin); at > 700*time.Millisecond {
		t.Fatalf("Started %s after the run began, behind the slow hold", at)
	}
}

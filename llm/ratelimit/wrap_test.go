package ratelimit_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/ratelimit"
)

func paced(t *testing.T, fake *llmfake.Server, reg *ratelimit.Registry, policy llm.RetryPolicy) llm.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: fake.URL, HTTPClient: ratelimit.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	return llm.WithRetry(reg.Wrap(p, "sk-ant-test"), policy)
}

func ask(ctx context.Context, p llm.Provider, onDelta func(llm.Delta)) (*llm.Response, error) {
	return p.Stream(ctx, &llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{llm.UserText("hi")}, MaxTokens: 100}, onDelta)
}

// A 429 that still comes is waited out per its Retry-After and sent
// again without counting as one of the retries: with no retries at all
// allowed, three refusals still end in the answer.
func TestRefusalsWaitedOutWithoutCountingAsRetries(t *testing.T) {
	refusal := llmfake.Turn{Status: 429, RetryAfter: "0.05"}
	fake := llmfake.NewAnthropic(t, refusal, refusal, refusal, llmfake.Turn{Text: "hello"})
	reg := ratelimit.NewRegistry(nil, nil)
	p := paced(t, fake, reg, llm.RetryPolicy{MaxRetries: 0})
	var resets int
	resp, err := ask(context.Background(), p, func(d llm.Delta) {
		if d.Type == llm.DeltaReset {
			resets++
		}
	})
	if err != nil || resp.Message.TextContent() != "hello" {
		t.Fatalf("answer: %v %v", resp, err)
	}
	if waits, refusals := reg.Stats(); refusals != 3 || waits < 3 {
		t.Errorf("stats: %d waits, %d refusals; want ≥ 3 waits (one per Retry-After) and 3 refusals", waits, refusals)
	}
	if resets != 0 {
		t.Errorf("%d resets for refusals before any output", resets)
	}
}

// More refusals than MaxRefusals go to the retry policy.
func TestEndlessRefusalsReachTheRetryPolicy(t *testing.T) {
	fake := llmfake.NewAnthropic(t)
	fake.Respond = func(llmfake.Request) llmfake.Turn { return llmfake.Turn{Status: 429, RetryAfter: "0.001"} }
	p := paced(t, fake, ratelimit.NewRegistry(nil, nil), llm.RetryPolicy{MaxRetries: 0})
	_, err := ask(context.Background(), p, nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("err = %v, want the 429", err)
	}
	if n := len(fake.Requests()); n != ratelimit.MaxRefusals+1 {
		t.Errorf("%d requests, want %d", n, ratelimit.MaxRefusals+1)
	}
}

// A request held back tells the context's WaitNotice how long, before it
// waits, and ends the notice when it goes; a done context ends the wait
// at once.
func TestWaitIsNoticed(t *testing.T) {
	fake := llmfake.NewAnthropic(t)
	fake.Respond = func(llmfake.Request) llmfake.Turn { return llmfake.Turn{Text: "ok"} }
	reg := ratelimit.NewRegistry(llm.RateLimits{"claude-haiku-4-5": {RPM: 1, Window: 300 * time.Millisecond}}, nil)
	p := paced(t, fake, reg, llm.RetryPolicy{})
	var noticed []time.Duration
	ended := 0
	ctx := llm.WithWaitNotice(context.Background(), func(d time.Duration) func() {
		noticed = append(noticed, d)
		return func() { ended++ }
	})
	for range 2 {
		if _, err := ask(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(noticed) != 1 || noticed[0] <= 0 || ended != 1 {
		t.Fatalf("notices %v, ended %d; want one wait noticed and ended", noticed, ended)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := errors.New("stopped")
	cancel(stop)
	if _, err := ask(cctx, p, nil); !errors.Is(err, stop) {
		t.Errorf("err = %v, want the context's cause", err)
	}
}

// gated is a provider that counts its calls and holds the first until
// released.
type gated struct {
	llm.Provider
	mu               sync.Mutex
	calls            int
	release, started chan struct{}
}

func (g *gated) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	g.mu.Unlock()
	if first {
		close(g.started)
		<-g.release
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("ok")}}}, nil
}

func (g *gated) Name() string { return "gated" }

// Until the process knows a key's limits, its first request goes alone:
// the others wait for its answer (here one without headers), then all go.
func TestFirstRequestOfAKeyGoesAlone(t *testing.T) {
	g := &gated{release: make(chan struct{}), started: make(chan struct{})}
	p := ratelimit.NewRegistry(nil, nil).Wrap(g, "k")
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := ask(context.Background(), p, nil); err != nil {
				t.Error(err)
			}
		})
	}
	<-g.started
	time.Sleep(50 * time.Millisecond)
	g.mu.Lock()
	if g.calls != 1 {
		t.Errorf("%d calls while the first was unanswered, want 1", g.calls)
	}
	g.mu.Unlock()
	close(g.release)
	wg.Wait()
	if g.calls != 10 {
		t.Fatalf("%d calls, want 10", g.calls)
	}
}

// TestServerSeenThroughTheWrappers: the provider the limiter and the
// retry policy wrap still names its server (llm.ServerOf, for the
// server.address and server.port of a model call's span).
func TestServerSeenThroughTheWrappers(t *testing.T) {
	fake := llmfake.NewAnthropic(t)
	p := paced(t, fake, ratelimit.NewRegistry(nil, nil), llm.DefaultRetryPolicy)
	host, port := llm.ServerOf(p)
	if got := "http://" + net.JoinHostPort(host, strconv.Itoa(port)); got != fake.URL {
		t.Fatalf("server %q, want %q", got, fake.URL)
	}
}

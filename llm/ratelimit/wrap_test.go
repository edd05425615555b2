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

func paced(t testing.TB, fake *llmfake.Server, reg *ratelimit.Registry, policy llm.RetryPolicy) llm.Provider {
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

// held is a provider whose calls all wait until n of them are in it at
// once (or the test's deadline passes).
type held struct {
	llm.Provider
	n       int
	mu      sync.Mutex
	in      int
	all     chan struct{}
	timeout time.Duration
}

func (h *held) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	h.mu.Lock()
	h.in++
	if h.in == h.n {
		close(h.all)
	}
	h.mu.Unlock()
	select {
	case <-h.all:
	case <-time.After(h.timeout):
		return nil, errors.New("not every request of the fan-out was let go")
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("ok")}}}, nil
}

func (h *held) Name() string { return "held" }

// A fan-out's first requests all go at once while the process knows
// nothing of the key's limits: none waits for another's answer.
func TestFanOutOfAnUnknownKeyGoesTogether(t *testing.T) {
	for _, k := range []int{8, 32} {
		h := &held{n: k, all: make(chan struct{}), timeout: 2 * time.Second}
		reg := ratelimit.NewRegistry(nil, nil)
		p := reg.Wrap(h, "k")
		var wg sync.WaitGroup
		for range k {
			wg.Go(func() {
				if _, err := ask(context.Background(), p, nil); err != nil {
					t.Errorf("k=%d: %v", k, err)
				}
			})
		}
		wg.Wait()
		if waits, _ := reg.Stats(); waits != 0 {
			t.Errorf("k=%d: %d requests held back", k, waits)
		}
	}
}

// The answer to the first of a burst sent blind says what was left when
// the server admitted it; the requests sent after it and not answered
// yet are taken off. Eight requests against a limit of eight: the first
// is answered at once (7 left, it says), the other seven are still on
// their way, so a ninth sent then must wait, not be refused.
func TestAnswerToABurstCountsTheRequestsStillOut(t *testing.T) {
	fake := llmfake.NewAnthropic(t)
	arrived := make(chan int, 16)
	all := make(chan struct{})
	var (
		mu sync.Mutex
		n  int
	)
	fake.Respond = func(llmfake.Request) llmfake.Turn {
		mu.Lock()
		n++
		i := n
		if i == 8 {
			close(all)
		}
		mu.Unlock()
		arrived <- i
		if i == 1 {
			<-all // answered once the other seven are on their way
			return llmfake.Turn{Text: "first"}
		}
		return llmfake.Turn{Text: "later", Delay: 400 * time.Millisecond}
	}
	fake.SetRateLimit(llmfake.RateLimit{N: 8, Window: time.Minute})
	reg := ratelimit.NewRegistry(nil, nil)
	p := paced(t, fake, reg, llm.RetryPolicy{MaxRetries: 0})
	var wg sync.WaitGroup
	first := make(chan error, 1)
	for i := range 8 {
		wg.Go(func() {
			_, err := ask(context.Background(), p, nil)
			if i == 0 {
				first <- err
			} else if err != nil {
				t.Error(err)
			}
		})
		<-arrived // one at a time, so the server sees them in the order sent
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	held := errors.New("held back")
	ctx = llm.WithWaitNotice(ctx, func(time.Duration) func() { cancel(held); return nil })
	_, err := ask(ctx, p, nil)
	wg.Wait()
	if !errors.Is(err, held) {
		t.Errorf("ninth request: %v, want it held back", err)
	}
	if r := fake.Refused(); r != 0 {
		t.Errorf("%d requests refused", r)
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

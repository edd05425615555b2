package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
	"github.com/avaagent/ava/llm/llmfake"
)

// fastRetry retries quickly but lets a server's Retry-After through.
var fastRetry = llm.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second}

func TestRateLimitRetryAfterThenSuccess(t *testing.T) {
	srv := llmfake.NewAnthropic(t,
		llmfake.Turn{Status: http.StatusTooManyRequests, RetryAfter: "1"},
		llmfake.Turn{Text: "made it"},
	)
	p := llm.WithRetry(newProvider(t, srv), fastRetry)
	var d deltas
	start := time.Now()
	resp, err := p.Stream(context.Background(), userRequest("hi"), d.add)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Message.TextContent() != "made it" {
		t.Errorf("text = %q", resp.Message.TextContent())
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server got %d requests, want 2", n)
	}
	if elapsed < 900*time.Millisecond || elapsed > 4*time.Second {
		t.Errorf("took %v, want about the 1 s Retry-After", elapsed)
	}
	got := d.all()
	if len(got) == 0 || got[0].Type != llm.DeltaReset || got[0].Attempt != 1 {
		t.Fatalf("first delta = %+v, want a reset for attempt 1", got)
	}
	var apiErr *llm.APIError
	if !errors.As(got[0].Err, &apiErr) || apiErr.StatusCode != 429 || apiErr.RetryAfter != time.Second ||
		apiErr.Provider != "anthropic" || !strings.Contains(apiErr.Message, "rate_limit_error") {
		t.Errorf("reset error = %#v", got[0].Err)
	}
}

func TestBadRequestNotRetried(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Status: http.StatusBadRequest}, llmfake.Turn{Text: "never"})
	p := llm.WithRetry(newProvider(t, srv), fastRetry)
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "invalid_request_error: llmfake: scripted error 400") {
		t.Fatalf("err = %v, want an HTTP 400 APIError", err)
	}
	if llm.IsRetryable(err) {
		t.Error("400 is retryable")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestOverloadedStatus(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Status: 529})
	_, err := newProvider(t, srv).Stream(context.Background(), userRequest("hi"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || !llm.IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable 529", err)
	}
}

func TestNoTurnLeft(t *testing.T) {
	srv := llmfake.NewAnthropic(t)
	_, err := newProvider(t, srv).Stream(context.Background(), userRequest("hi"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "llmfake: no scripted turn left") {
		t.Fatalf("err = %v, want a 500 naming the empty script", err)
	}
}

func TestStreamCut(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "this answer will be cut off half way through", CutAfter: 4})
	var d deltas
	_, err := newProvider(t, srv).Stream(context.Background(), userRequest("hi"), d.add)
	if !errors.Is(err, llm.ErrStreamCut) || !llm.IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable ErrStreamCut", err)
	}
	if text, _ := d.joined(llm.DeltaText); text == "" {
		t.Error("no text streamed before the cut; the test does not cut mid-stream")
	}
}

func TestStreamCutRetried(t *testing.T) {
	srv := llmfake.NewAnthropic(t,
		llmfake.Turn{Text: "first attempt text that is lost", CutAfter: 4},
		llmfake.Turn{Text: "second attempt"},
	)
	var d deltas
	resp, err := llm.WithRetry(newProvider(t, srv), fastRetry).Stream(context.Background(), userRequest("hi"), d.add)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Message.TextContent() != "second attempt" {
		t.Errorf("text = %q", resp.Message.TextContent())
	}
	// Text from the cut attempt, then a reset, then the new text.
	var kinds []llm.DeltaType
	for _, x := range d.all() {
		if len(kinds) == 0 || kinds[len(kinds)-1] != x.Type {
			kinds = append(kinds, x.Type)
		}
	}
	if fmt.Sprint(kinds) != "[text reset text]" {
		t.Errorf("delta sequence = %v, want [text reset text]", kinds)
	}
}

func TestMalformedEvent(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "hello", Malformed: true}, llmfake.Turn{Text: "unused"})
	_, err := llm.WithRetry(newProvider(t, srv), fastRetry).Stream(context.Background(), userRequest("hi"), nil)
	if !errors.Is(err, llm.ErrMalformed) || llm.IsRetryable(err) {
		t.Fatalf("err = %v, want a non-retryable ErrMalformed", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "a long answer that never finishes", Hang: true})
	errStop := errors.New("user pressed stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var cancelled time.Time
	onDelta := func(d llm.Delta) {
		if d.Type == llm.DeltaText && cancelled.IsZero() {
			cancelled = time.Now()
			cancel(errStop)
		}
	}
	_, err := newProvider(t, srv).Stream(ctx, userRequest("hi"), onDelta)
	if cancelled.IsZero() {
		t.Fatalf("no text arrived before the hang; err = %v", err)
	}
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("Stream returned %v after cancel", d)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errStop) || llm.IsRetryable(err) {
		t.Errorf("err = %v, want context.Canceled with its cause", err)
	}
	select {
	case <-srv.Disconnected():
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the client leave")
	}
}

func TestCancelBeforeResponse(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "late", Delay: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := llm.WithRetry(newProvider(t, srv), fastRetry).Stream(ctx, userRequest("hi"), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stream took %v", d)
	}
	select {
	case <-srv.Disconnected():
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the client leave")
	}
}

// rawServer answers every request with body as contentType, for wire
// cases the scripted fake does not produce.
func rawServer(t *testing.T, contentType, body string) *anthropic.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const messageStart = "event: message_start\ndata: " +
	`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}` + "\n\n"

func TestStreamErrorEvent(t *testing.T) {
	p := rawServer(t, "text/event-stream", messageStart+
		"event: error\ndata: "+`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`+"\n\n")
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Message != "overloaded_error: Overloaded" {
		t.Fatalf("err = %#v, want a 529 overloaded APIError", err)
	}
	if !llm.IsRetryable(err) {
		t.Error("overloaded is not retryable")
	}
}

func TestStreamEndsWithoutMessageStop(t *testing.T) {
	p := rawServer(t, "text/event-stream", messageStart+
		"event: content_block_start\ndata: "+`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n")
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if !errors.Is(err, llm.ErrStreamCut) {
		t.Fatalf("err = %v, want ErrStreamCut", err)
	}
}

func TestProtocolViolation(t *testing.T) {
	p := rawServer(t, "text/event-stream", messageStart+
		"event: content_block_delta\ndata: "+`{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`+"\n\n")
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if !errors.Is(err, llm.ErrMalformed) || !strings.Contains(err.Error(), "unknown block 3") {
		t.Fatalf("err = %v, want ErrMalformed naming the block", err)
	}
}

func TestNotAnEventStream(t *testing.T) {
	p := rawServer(t, "application/json", `{"id":"m","type":"message","content":[]}`)
	_, err := p.Stream(context.Background(), userRequest("hi"), nil)
	if !errors.Is(err, llm.ErrMalformed) || !strings.Contains(err.Error(), "application/json") {
		t.Fatalf("err = %v, want ErrMalformed naming the content type", err)
	}
}

func TestHTMLErrorPage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Retry-After-Ms", "1500")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	}))
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL + "/proxy", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), userRequest("hi"), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Message != "<html>bad gateway</html>" ||
		apiErr.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("err = %#v", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), userRequest("hi"), nil)
	if err == nil || !llm.IsRetryable(err) {
		t.Fatalf("err = %v, want a retryable connection error", err)
	}
}

// The provider reads Retry-After by the shared rule of llm.ParseRetryAfter:
// an absurd wait is capped, not overflowed into a negative duration.
func TestRetryAfterUsesSharedRule(t *testing.T) {
	llmfake.CheckRetryAfter(t, func(v string) error {
		srv := llmfake.NewAnthropic(t, llmfake.Turn{Status: http.StatusTooManyRequests, RetryAfter: v})
		_, err := newProvider(t, srv).Stream(context.Background(), userRequest("hi"), nil)
		return err
	})
}

// A connection closed without an answer (EOF: a provider's load balancer
// dropping it) is retried like a reset one, and the retry's answer is
// the only one.
func TestDroppedConnectionRetried(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Drop: true}, llmfake.Turn{Drop: true}, llmfake.Turn{Text: "after the drops"})
	_, err := newProvider(t, srv).Stream(context.Background(), userRequest("hi"), nil)
	if err == nil || !llm.IsRetryable(err) {
		t.Fatalf("a dropped connection: err = %v, want a retryable error", err)
	}
	resp, err := llm.WithRetry(newProvider(t, srv), fastRetry).Stream(context.Background(), userRequest("hi"), nil)
	if err != nil || resp.Message.TextContent() != "after the drops" {
		t.Fatalf("after retries: %v %+v", err, resp)
	}
}

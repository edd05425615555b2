package openai_test

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
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
)

var fastRetry = llm.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}

func TestRateLimitCarriesRetryAfter(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Status: 429, RetryAfter: "7"})
	_, err := newProvider(t, srv).Stream(t.Context(), simpleRequest(), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *llm.APIError", err)
	}
	if apiErr.StatusCode != 429 || apiErr.RetryAfter != 7*time.Second || apiErr.Provider != "openai" || !apiErr.Retryable() {
		t.Errorf("APIError = %+v, want retryable 429 from openai with Retry-After 7s", apiErr)
	}
	if !strings.Contains(apiErr.Message, "scripted error 429") {
		t.Errorf("message = %q, want the server's error message", apiErr.Message)
	}
}

func TestRateLimitThenSuccessThroughRetry(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Status: 429, RetryAfter: "1"}, llmfake.Turn{Text: "finally"})
	p := llm.WithRetry(newProvider(t, srv), fastRetry)
	start := time.Now()
	resp, rec := stream(t, p, simpleRequest())
	if resp.Message.TextContent() != "finally" {
		t.Errorf("text = %q", resp.Message.TextContent())
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v: Retry-After was not capped by the policy", d)
	}
	if len(rec.deltas) == 0 || rec.deltas[0].Type != llm.DeltaReset {
		t.Errorf("deltas = %+v, want a reset first", rec.deltas)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server got %d requests, want 2", n)
	}
}

func TestServerErrorRetried(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Status: 503}, llmfake.Turn{Status: 503}, llmfake.Turn{Text: "up again"})
	resp, _ := stream(t, llm.WithRetry(newProvider(t, srv), fastRetry), simpleRequest())
	if resp.Message.TextContent() != "up again" || len(srv.Requests()) != 3 {
		t.Errorf("text %q after %d requests, want success on the third", resp.Message.TextContent(), len(srv.Requests()))
	}
}

func TestBadRequestNotRetried(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Status: 400}, llmfake.Turn{Text: "unused"})
	_, err := llm.WithRetry(newProvider(t, srv), fastRetry).Stream(t.Context(), simpleRequest(), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Errorf("err = %v, want an HTTP 400 APIError", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestStreamCut(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "one two three four five six", CutAfter: 3})
	rec := &recorder{}
	_, err := newProvider(t, srv).Stream(t.Context(), simpleRequest(), rec.on)
	if !errors.Is(err, llm.ErrStreamCut) || !llm.IsRetryable(err) {
		t.Errorf("err = %v, want retryable ErrStreamCut", err)
	}
	if text, _ := rec.joined(llm.DeltaText); text != "one two " {
		t.Errorf("deltas before the cut = %q, want %q", text, "one two ")
	}
}

func TestStreamCutThenRetried(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "lost words", CutAfter: 2}, llmfake.Turn{Text: "whole"})
	resp, _ := stream(t, llm.WithRetry(newProvider(t, srv), fastRetry), simpleRequest())
	if resp.Message.TextContent() != "whole" {
		t.Errorf("text = %q, want the retried turn only", resp.Message.TextContent())
	}
}

func TestMalformedChunk(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "never arrives", Malformed: true})
	_, err := newProvider(t, srv).Stream(t.Context(), simpleRequest(), nil)
	if !errors.Is(err, llm.ErrMalformed) || llm.IsRetryable(err) {
		t.Errorf("err = %v, want non-retryable ErrMalformed", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "partial answer that never ends", Hang: true})
	p := newProvider(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cancelled time.Time
	_, err := p.Stream(ctx, simpleRequest(), func(d llm.Delta) {
		if d.Type == llm.DeltaText && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if cancelled.IsZero() {
		t.Fatal("no text delta arrived before the hang")
	}
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("Stream returned %v after cancel", d)
	}
	waitDisconnect(t, srv)
}

// rawServer serves one handler on loopback, for wire cases the scripted
// fake does not produce.
func rawServer(t *testing.T, h http.HandlerFunc) *openai.Provider {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p, err := openai.New(openai.Config{Name: "openrouter", BaseURL: srv.URL + "/api/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sse(w http.ResponseWriter, lines ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, l := range lines {
		fmt.Fprintf(w, "data: %s\n\n", l)
	}
}

const chunkHello = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}`

func TestCleanEndWithoutFinishIsACut(t *testing.T) {
	p := rawServer(t, func(w http.ResponseWriter, r *http.Request) { sse(w, chunkHello) })
	_, err := p.Stream(t.Context(), simpleRequest(), nil)
	if !errors.Is(err, llm.ErrStreamCut) {
		t.Errorf("err = %v, want ErrStreamCut", err)
	}
}

func TestDoneWithoutFinishIsComplete(t *testing.T) {
	p := rawServer(t, func(w http.ResponseWriter, r *http.Request) { sse(w, chunkHello, "[DONE]") })
	resp, _ := stream(t, p, simpleRequest())
	if resp.Message.TextContent() != "hello" || resp.StopReason != llm.StopEndTurn {
		t.Errorf("response = %+v, want hello / end_turn", resp)
	}
}

func TestErrorInsideStream(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		status int
	}{
		{"openai server error", `{"error":{"message":"The server had an error","type":"server_error","code":null}}`, 500},
		{"openrouter numeric code", `{"error":{"message":"Rate limited upstream","code":429}}`, 429},
		{"invalid request", `{"error":{"message":"context too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := rawServer(t, func(w http.ResponseWriter, r *http.Request) { sse(w, chunkHello, c.data) })
			_, err := p.Stream(t.Context(), simpleRequest(), nil)
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *llm.APIError", err)
			}
			if apiErr.StatusCode != c.status || apiErr.Provider != "openrouter" || apiErr.Message == "" {
				t.Errorf("APIError = %+v, want status %d from openrouter with a message", apiErr, c.status)
			}
		})
	}
}

func TestNonJSONErrorBody(t *testing.T) {
	p := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html><body>502 Bad Gateway</body></html>")
	})
	_, err := p.Stream(t.Context(), simpleRequest(), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *llm.APIError", err)
	}
	if apiErr.StatusCode != 502 || apiErr.RetryAfter != 2*time.Second || !strings.Contains(apiErr.Message, "Bad Gateway") {
		t.Errorf("APIError = %+v, want 502, Retry-After 2s and the body's text", apiErr)
	}
}

func TestToolCallsWithoutIndexOrID(t *testing.T) {
	// Some local servers send each call whole, without index or id.
	chunk := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[` +
		`{"type":"function","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":null}]}`
	chunk2 := strings.Replace(chunk, `"ls"`, `"pwd"`, 1)
	chunk2 = strings.Replace(chunk2, `{"type"`, `{"id":"c9","type"`, 1)
	finish := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	p := rawServer(t, func(w http.ResponseWriter, r *http.Request) { sse(w, chunk, chunk2, finish, "[DONE]") })
	resp, _ := stream(t, p, simpleRequest())
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 || calls[0].ToolName != "ls" || calls[1].ToolName != "pwd" || calls[1].ToolCallID != "c9" {
		t.Fatalf("calls = %+v, want ls then pwd (c9)", calls)
	}
	if !strings.HasPrefix(calls[0].ToolCallID, "call_") {
		t.Errorf("first call ID = %q, want a generated call_ ID", calls[0].ToolCallID)
	}
	if resp.StopReason != llm.StopToolUse {
		t.Errorf("stop = %q, want tool_use for a turn with calls", resp.StopReason)
	}
}

// The provider reads Retry-After by the shared rule of llm.ParseRetryAfter.
func TestRetryAfterUsesSharedRule(t *testing.T) {
	llmfake.CheckRetryAfter(t, func(v string) error {
		srv := llmfake.NewOpenAI(t, llmfake.Turn{Status: http.StatusTooManyRequests, RetryAfter: v})
		_, err := newProvider(t, srv).Stream(t.Context(), simpleRequest(), nil)
		return err
	})
}

// A connection closed without an answer (EOF) is retried like a reset
// one.
func TestDroppedConnectionRetried(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Drop: true}, llmfake.Turn{Drop: true}, llmfake.Turn{Text: "after the drops"})
	_, err := newProvider(t, srv).Stream(t.Context(), simpleRequest(), nil)
	if err == nil || !llm.IsRetryable(err) {
		t.Fatalf("a dropped connection: err = %v, want a retryable error", err)
	}
	resp, _ := stream(t, llm.WithRetry(newProvider(t, srv), fastRetry), simpleRequest())
	if resp.Message.TextContent() != "after the drops" {
		t.Fatalf("text = %q", resp.Message.TextContent())
	}
}

package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
	"github.com/avaagent/ava/llm/llmfake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testModel = "claude-test-1"

func newProvider(t testing.TB, srv *llmfake.Server) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func userRequest(text string) *llm.Request {
	return &llm.Request{Model: testModel, Messages: []llm.Message{llm.UserText(text)}}
}

// deltas records what onDelta received.
type deltas struct {
	mu  sync.Mutex
	got []llm.Delta
}

func (d *deltas) add(x llm.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, x)
}

func (d *deltas) all() []llm.Delta {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]llm.Delta(nil), d.got...)
}

// joined concatenates the text of the deltas of type typ.
func (d *deltas) joined(typ llm.DeltaType) (string, int) {
	var b strings.Builder
	n := 0
	for _, x := range d.all() {
		if x.Type == typ {
			b.WriteString(x.Text)
			n++
		}
	}
	return b.String(), n
}

// lookup walks a decoded JSON body: string keys index objects, ints index
// arrays.
func lookup(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("lookup %v: %T is not an object", path, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("lookup %v: %v has no index %d", path, v, k)
			}
			v = a[k]
		}
	}
	return v
}

func TestStreamText(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog, twice: the quick brown fox."
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: text, Usage: llm.Usage{InputTokens: 12, OutputTokens: 7}})
	p := newProvider(t, srv)
	var d deltas

	resp, err := p.Stream(context.Background(), userRequest("hi"), d.add)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := &llm.Response{
		Message:       llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(text)}},
		Usage:         llm.Usage{InputTokens: 12, OutputTokens: 7},
		StopReason:    llm.StopEndTurn,
		RawStopReason: "end_turn",
		ID:            "msg_fake_1",
		Model:         testModel,
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	streamed, n := d.joined(llm.DeltaText)
	if streamed != text || n < 2 {
		t.Errorf("text deltas = %q in %d pieces, want %q in several", streamed, n, text)
	}
	if p.Name() != "anthropic" {
		t.Errorf("Name() = %q", p.Name())
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != "test-key" {
		t.Errorf("path %q, x-api-key %q", r.Path, r.Header.Get("X-Api-Key"))
	}
	if lookup(t, r.Body, "stream") != true || lookup(t, r.Body, "model") != testModel ||
		lookup(t, r.Body, "max_tokens") != float64(anthropic.DefaultMaxTokens) {
		t.Errorf("body = %s", r.Raw)
	}
	if got := lookup(t, r.Body, "messages", 0, "content", 0, "text"); got != "hi" {
		t.Errorf("user text = %v", got)
	}
	if lookup(t, r.Body, "thinking") != nil {
		t.Errorf("thinking sent without a budget: %s", r.Raw)
	}
}

func TestStreamToolCall(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{
		Text:      "Let me read it.",
		ToolCalls: []llmfake.ToolCall{{ID: "toolu_1", Name: "read_file", Args: `{"path":"a.txt"}`}},
	})
	var d deltas
	resp, err := newProvider(t, srv).Stream(context.Background(), userRequest("read a.txt"), d.add)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []llm.Block{
		llm.Text("Let me read it."),
		{Type: llm.BlockToolCall, ToolCallID: "toolu_1", ToolName: "read_file", Input: json.RawMessage(`{"path":"a.txt"}`)},
	}
	if diff := cmp.Diff(want, resp.Message.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	if resp.StopReason != llm.StopToolUse {
		t.Errorf("stop = %q, want tool_use", resp.StopReason)
	}
	var calls []string
	for _, x := range d.all() {
		if x.Type == llm.DeltaToolCall {
			calls = append(calls, x.ToolName)
		}
	}
	if diff := cmp.Diff([]string{"read_file"}, calls); diff != "" {
		t.Errorf("tool call deltas (-want +got):\n%s", diff)
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{ToolCalls: []llmfake.ToolCall{
		{ID: "toolu_a", Name: "read_file", Args: `{"path":"a"}`},
		{ID: "toolu_b", Name: "grep", Args: `{"pattern":"x"}`},
		{ID: "toolu_c", Name: "read_file", Args: `{"path":"c"}`},
	}})
	var d deltas
	resp, err := newProvider(t, srv).Stream(context.Background(), userRequest("go"), d.add)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	var got []string
	for _, b := range resp.Message.ToolCalls() {
		got = append(got, b.ToolCallID+" "+b.ToolName+" "+string(b.Input))
	}
	want := []string{`toolu_a read_file {"path":"a"}`, `toolu_b grep {"pattern":"x"}`, `toolu_c read_file {"path":"c"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	n := 0
	for _, x := range d.all() {
		if x.Type == llm.DeltaToolCall {
			n++
		}
	}
	if n != 3 {
		t.Errorf("got %d tool call deltas, want 3", n)
	}
}

func TestStreamToolArgsInChunks(t *testing.T) {
	args := `{"path":"dir/file.go","content":"package main\n\nfunc main() {\n\tprintln(\"héllo\")\n}\n","mode":420}`
	broken := `{"path": "a.txt", "content": "unterminated`
	srv := llmfake.NewAnthropic(t, llmfake.Turn{
		ArgChunks: 9,
		ToolCalls: []llmfake.ToolCall{{ID: "t1", Name: "write_file", Args: args}, {ID: "t2", Name: "write_file", Args: broken}},
	})
	resp, err := newProvider(t, srv).Stream(context.Background(), userRequest("write"), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 {
		t.Fatalf("got %d tool calls, want 2", len(calls))
	}
	if string(calls[0].Input) != args {
		t.Errorf("assembled input = %s, want %s", calls[0].Input, args)
	}
	if string(calls[1].Input) != broken {
		t.Errorf("invalid input = %s, want the raw text %s", calls[1].Input, broken)
	}
}

func TestStreamUsageWithCache(t *testing.T) {
	usage := llm.Usage{InputTokens: 30, OutputTokens: 120, CacheReadTokens: 5000, CacheWriteTokens: 700}
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "ok", Usage: usage})
	resp, err := newProvider(t, srv).Stream(context.Background(), userRequest("hi"), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if diff := cmp.Diff(usage, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestStreamStopReasons(t *testing.T) {
	for wire, want := range map[string]llm.StopReason{
		"end_turn": llm.StopEndTurn, "max_tokens": llm.StopMaxTokens, "tool_use": llm.StopToolUse,
		"refusal": llm.StopOther, "pause_turn": llm.StopPause, "stop_sequence": llm.StopEndTurn,
		"model_context_window_exceeded": llm.StopMaxTokens,
	} {
		srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "x", StopReason: wire})
		resp, err := newProvider(t, srv).Stream(context.Background(), userRequest("hi"), nil)
		if err != nil {
			t.Fatalf("%s: Stream: %v", wire, err)
		}
		// The API's own reason is kept as sent, beside Ava's.
		if resp.StopReason != want || resp.RawStopReason != wire {
			t.Errorf("%s: stop = %q (raw %q), want %q (raw %[1]q)", wire, resp.StopReason, resp.RawStopReason, want)
		}
	}
}

func TestStreamConcurrent(t *testing.T) {
	const n = 8
	srv := llmfake.NewAnthropic(t)
	for range n {
		srv.Push(llmfake.Turn{Text: "same answer for everyone"})
	}
	p := newProvider(t, srv)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			resp, err := p.Stream(context.Background(), userRequest("hi"), nil)
			if err == nil && resp.Message.TextContent() != "same answer for everyone" {
				err = fmt.Errorf("wrong text %q", resp.Message.TextContent())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := len(srv.Requests()); got != n {
		t.Errorf("server got %d requests, want %d", got, n)
	}
}

func TestNewConfigErrors(t *testing.T) {
	for name, cfg := range map[string]anthropic.Config{
		"no key":       {},
		"bad base URL": {APIKey: "k", BaseURL: "api.example.com"},
		"negative max": {APIKey: "k", MaxTokens: -1},
	} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("%s: New succeeded, want an error", name)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	text := strings.Repeat("All work and no play makes Jack a dull boy. ", 200)
	srv := llmfake.NewAnthropic(b)
	p := newProvider(b, srv)
	req := userRequest("hi")
	b.ReportAllocs()
	for b.Loop() {
		srv.Push(llmfake.Turn{Text: text})
		if _, err := p.Stream(context.Background(), req, func(llm.Delta) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBaseURLNamesTheServer: the provider says which server it calls
// (llm.Endpoint), through the retry policy that wraps it too: the
// configured base URL's host and port, else the public API's.
func TestBaseURLNamesTheServer(t *testing.T) {
	srv := llmfake.NewAnthropic(t)
	host, port := llm.ServerOf(llm.WithRetry(newProvider(t, srv), llm.DefaultRetryPolicy))
	if got := fmt.Sprintf("http://%s:%d", host, port); got != srv.URL {
		t.Errorf("server %s, want %s", got, srv.URL)
	}
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	if host, port := llm.ServerOf(p); host != "api.anthropic.com" || port != 443 {
		t.Errorf("public API server %s:%d", host, port)
	}
}

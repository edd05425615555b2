package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newProvider returns a provider talking to srv's /v1 root.
func newProvider(t testing.TB, srv *llmfake.Server, edit ...func(*openai.Config)) *openai.Provider {
	t.Helper()
	cfg := openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// recorder collects deltas.
type recorder struct{ deltas []llm.Delta }

func (r *recorder) on(d llm.Delta) { r.deltas = append(r.deltas, d) }

// joined concatenates the text of deltas of type t and counts them.
func (r *recorder) joined(t llm.DeltaType) (string, int) {
	var b strings.Builder
	n := 0
	for _, d := range r.deltas {
		if d.Type == t {
			b.WriteString(d.Text + d.ToolName)
			n++
		}
	}
	return b.String(), n
}

func simpleRequest() *llm.Request {
	return &llm.Request{Model: "gpt-test", System: "be brief", Messages: []llm.Message{llm.UserText("hi")}}
}

func stream(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, *recorder) {
	t.Helper()
	rec := &recorder{}
	resp, err := p.Stream(t.Context(), req, rec.on)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	return resp, rec
}

func TestStreamText(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "Hello there, small world", Usage: llm.Usage{InputTokens: 12, OutputTokens: 5}})
	p := newProvider(t, srv, func(c *openai.Config) { c.Headers = map[string]string{"X-Title": "ava"} })

	resp, rec := stream(t, p, simpleRequest())

	text, n := rec.joined(llm.DeltaText)
	if text != "Hello there, small world" || n < 2 {
		t.Errorf("text deltas = %q in %d deltas, want the whole text in several", text, n)
	}
	// The provider's own finish_reason is kept beside the normalised
	// one, with the completion's ID.
	if !strings.HasPrefix(resp.ID, "chatcmpl-") {
		t.Errorf("ID = %q, want the completion's chatcmpl-… ID", resp.ID)
	}
	want := &llm.Response{
		Message:       llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("Hello there, small world")}},
		Usage:         llm.Usage{InputTokens: 12, OutputTokens: 5},
		StopReason:    llm.StopEndTurn,
		RawStopReason: "stop",
		ID:            resp.ID,
		Model:         "gpt-test",
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Path != "/v1/chat/completions" {
		t.Errorf("path = %q", got.Path)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization = %q", h)
	}
	if h := got.Header.Get("X-Title"); h != "ava" {
		t.Errorf("X-Title = %q, want the configured header", h)
	}
	if got.Body["stream"] != true || got.Body["model"] != "gpt-test" {
		t.Errorf("stream/model = %v/%v", got.Body["stream"], got.Body["model"])
	}
	wantMsgs := []any{
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "hi"},
	}
	if diff := cmp.Diff(wantMsgs, got.Body["messages"]); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	for _, absent := range []string{"tools", "max_tokens", "max_completion_tokens"} {
		if _, ok := got.Body[absent]; ok {
			t.Errorf("request has %q, want it absent", absent)
		}
	}
}

func TestStreamOneToolCall(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{
		Text:      "Reading it.",
		ToolCalls: []llmfake.ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":"a.go"}`}},
	})
	resp, rec := stream(t, newProvider(t, srv), simpleRequest())

	want := []llm.Block{
		llm.Text("Reading it."),
		{Type: llm.BlockToolCall, ToolCallID: "call_1", ToolName: "read_file", Input: json.RawMessage(`{"path":"a.go"}`)},
	}
	if diff := cmp.Diff(want, resp.Message.Content); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if resp.StopReason != llm.StopToolUse || resp.RawStopReason != "tool_calls" {
		t.Errorf("stop = %q (raw %q), want tool_use (tool_calls)", resp.StopReason, resp.RawStopReason)
	}
	if names, n := rec.joined(llm.DeltaToolCall); names != "read_file" || n != 1 {
		t.Errorf("tool call deltas = %q (%d), want one for read_file", names, n)
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{
		ArgChunks: 3,
		ToolCalls: []llmfake.ToolCall{
			{ID: "call_a", Name: "read_file", Args: `{"path":"a.go"}`},
			{ID: "call_b", Name: "grep", Args: `{"pattern":"func main"}`},
		},
	})
	resp, rec := stream(t, newProvider(t, srv), simpleRequest())

	want := []llm.Block{
		{Type: llm.BlockToolCall, ToolCallID: "call_a", ToolName: "read_file", Input: json.RawMessage(`{"path":"a.go"}`)},
		{Type: llm.BlockToolCall, ToolCallID: "call_b", ToolName: "grep", Input: json.RawMessage(`{"pattern":"func main"}`)},
	}
	if diff := cmp.Diff(want, resp.Message.Content); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if names, n := rec.joined(llm.DeltaToolCall); names != "read_filegrep" || n != 2 {
		t.Errorf("tool call deltas = %q (%d), want read_file then grep", names, n)
	}
}

func TestStreamToolArgsInManyChunks(t *testing.T) {
	long := `{"path":"internal/very/long/path/to/some/file.go","content":"` + strings.Repeat("line of code\\n", 40) + `"}`
	cases := map[string]string{
		"valid JSON":   long,
		"invalid JSON": `{"path": "a.go", "oops`, // kept raw for the agent loop to report
		"unicode":      `{"text":"héllo wörld ✓ ünïcödé"}`,
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			srv := llmfake.NewOpenAI(t, llmfake.Turn{ArgChunks: 17, ToolCalls: []llmfake.ToolCall{{ID: "c1", Name: "write", Args: args}}})
			resp, _ := stream(t, newProvider(t, srv), simpleRequest())
			calls := resp.Message.ToolCalls()
			if len(calls) != 1 {
				t.Fatalf("got %d tool calls, want 1", len(calls))
			}
			if string(calls[0].Input) != args {
				t.Errorf("input = %q\nwant    %q", calls[0].Input, args)
			}
		})
	}
}

func TestStreamReasoningContent(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Thinking: "The user greets me, so I greet back.", Text: "Hello!"})
	resp, rec := stream(t, newProvider(t, srv), simpleRequest())

	want := []llm.Block{{Type: llm.BlockThinking, Text: "The user greets me, so I greet back."}, llm.Text("Hello!")}
	if diff := cmp.Diff(want, resp.Message.Content); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if thinking, n := rec.joined(llm.DeltaThinking); thinking != "The user greets me, so I greet back." || n < 2 {
		t.Errorf("thinking deltas = %q (%d)", thinking, n)
	}
	if rec.deltas[0].Type != llm.DeltaThinking {
		t.Errorf("first delta is %q, want thinking before text", rec.deltas[0].Type)
	}
}

func TestStreamUsageWithCachedTokens(t *testing.T) {
	u := llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 400, CacheWriteTokens: 30}
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "ok", Usage: u})
	resp, _ := stream(t, newProvider(t, srv), simpleRequest())

	if resp.Usage != u {
		t.Errorf("usage = %+v, want %+v (cached tokens moved out of input)", resp.Usage, u)
	}
	opts, _ := srv.Requests()[0].Body["stream_options"].(map[string]any)
	if opts["include_usage"] != true {
		t.Errorf("stream_options = %v, want include_usage true", srv.Requests()[0].Body["stream_options"])
	}
}

func TestRequestMapping(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "done"})
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	req := &llm.Request{
		Model:     "gpt-test",
		MaxTokens: 256,
		Tools:     []llm.ToolDef{{Name: "read_file", Description: "Read a file.", Schema: schema}},
		Messages: []llm.Message{
			llm.UserText("read two files"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockThinking, Text: "secret plan", Signature: "sig"},
				llm.Text("Reading."),
				{Type: llm.BlockToolCall, ToolCallID: "call_1", ToolName: "read_file", Input: json.RawMessage(`{"path":"a"}`)},
				{Type: llm.BlockToolCall, ToolCallID: "call_2", ToolName: "read_file", Input: json.RawMessage(`{"path":"b"}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				llm.ToolResult("call_1", "contents of a", false),
				llm.ToolResult("call_2", "no such file", true),
				llm.Text("and summarise"),
			}},
		},
	}
	stream(t, newProvider(t, srv), req)
	body := srv.Requests()[0].Body

	wantMsgs := []any{
		map[string]any{"role": "user", "content": "read two files"},
		map[string]any{"role": "assistant", "content": "Reading.", "tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"a"}`}},
			map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"b"}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "contents of a"},
		map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "ERROR: no such file"},
		map[string]any{"role": "user", "content": "and summarise"},
	}
	if diff := cmp.Diff(wantMsgs, body["messages"]); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	var wantSchema any
	_ = json.Unmarshal(schema, &wantSchema)
	wantTools := []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "read_file", "description": "Read a file.", "parameters": wantSchema,
	}}}
	if diff := cmp.Diff(wantTools, body["tools"]); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if body["max_tokens"] != float64(256) {
		t.Errorf("max_tokens = %v, want 256 (non-OpenAI base URL)", body["max_tokens"])
	}
	if _, ok := body["max_completion_tokens"]; ok {
		t.Errorf("max_completion_tokens sent to a non-OpenAI server")
	}
}

func TestConfigMaxTokensIsTheDefaultCap(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "a"}, llmfake.Turn{Text: "b"})
	p := newProvider(t, srv, func(c *openai.Config) { c.MaxTokens = 1000 })
	stream(t, p, simpleRequest())
	req := simpleRequest()
	req.MaxTokens = 50
	stream(t, p, req)
	reqs := srv.Requests()
	if reqs[0].Body["max_tokens"] != float64(1000) || reqs[1].Body["max_tokens"] != float64(50) {
		t.Errorf("max_tokens = %v then %v, want 1000 (config) then 50 (request)", reqs[0].Body["max_tokens"], reqs[1].Body["max_tokens"])
	}
}

func TestBadRequestIsRefused(t *testing.T) {
	srv := llmfake.NewOpenAI(t)
	p := newProvider(t, srv)
	cases := map[string]*llm.Request{
		"nil":                    nil,
		"no model":               {Messages: []llm.Message{llm.UserText("x")}},
		"tool call from user":    {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c", ToolName: "t"}}}}},
		"result without id":      {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("", "x", false)}}}},
		"unknown role":           {Model: "m", Messages: []llm.Message{{Role: "system", Content: []llm.Block{llm.Text("x")}}}},
		"schema not an object":   {Model: "m", Tools: []llm.ToolDef{{Name: "t", Schema: json.RawMessage(`[1]`)}}},
		"tool call without name": {Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c"}}}}},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := p.Stream(t.Context(), req, nil); err == nil {
				t.Errorf("Stream accepted a bad request")
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server got %d requests, want none", n)
	}
}

func TestNewValidates(t *testing.T) {
	cases := map[string]openai.Config{
		"no key, no base URL": {},
		"relative base URL":   {APIKey: "k", BaseURL: "localhost:11434/v1"},
		"ftp base URL":        {APIKey: "k", BaseURL: "ftp://example.com/v1"},
		"slash in name":       {Name: "a/b", APIKey: "k"},
		"negative max tokens": {APIKey: "k", MaxTokens: -1},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := openai.New(cfg); err == nil {
				t.Errorf("New(%+v) succeeded, want an error", cfg)
			}
		})
	}
	p, err := openai.New(openai.Config{Name: "openrouter", APIKey: "k"})
	if err != nil || p.Name() != "openrouter" {
		t.Errorf("New(openrouter) = %v, %v", p, err)
	}
	p, err = openai.New(openai.Config{APIKey: "k"})
	if err != nil || p.Name() != "openai" {
		t.Errorf("New() name = %v, %v; want openai", p, err)
	}
}

func TestBaseURLWithoutV1(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "hi from ollama"})
	p := newProvider(t, srv, func(c *openai.Config) { c.BaseURL = srv.URL })
	resp, _ := stream(t, p, simpleRequest())
	if resp.Message.TextContent() != "hi from ollama" {
		t.Errorf("text = %q", resp.Message.TextContent())
	}
	if path := srv.Requests()[0].Path; path != "/chat/completions" {
		t.Errorf("path = %q, want /chat/completions", path)
	}
}

func TestNoAPIKeyWithBaseURL(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "local"})
	p := newProvider(t, srv, func(c *openai.Config) { c.APIKey = "" })
	resp, _ := stream(t, p, simpleRequest())
	if resp.Message.TextContent() != "local" {
		t.Errorf("text = %q", resp.Message.TextContent())
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none without a key", h)
	}
}

func TestConcurrentStreams(t *testing.T) {
	srv := llmfake.NewOpenAI(t)
	srv.Respond = func(r llmfake.Request) llmfake.Turn {
		msgs, _ := r.Body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		return llmfake.Turn{Text: "echo " + last["content"].(string), ChunkDelay: time.Millisecond}
	}
	p := newProvider(t, srv)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			q := strings.Repeat("x", i+1)
			resp, err := p.Stream(t.Context(), &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText(q)}}, nil)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			if got := resp.Message.TextContent(); got != "echo "+q {
				t.Errorf("stream %d: text %q, want %q", i, got, "echo "+q)
			}
		})
	}
	wg.Wait()
}

func TestTransportErrorIsRetryable(t *testing.T) {
	srv := llmfake.NewOpenAI(t)
	url := srv.URL
	srv.Close()
	p, err := openai.New(openai.Config{BaseURL: url, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(t.Context(), simpleRequest(), nil)
	if err == nil || !llm.IsRetryable(err) {
		t.Errorf("err = %v, want a retryable connection error", err)
	}
	if errors.Is(err, llm.ErrStreamCut) || errors.Is(err, llm.ErrMalformed) {
		t.Errorf("err = %v, misclassified as a stream failure", err)
	}
}

func TestContextCauseIsReturned(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Delay: 10 * time.Second})
	p := newProvider(t, srv)
	errStop := errors.New("stopped by user")
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(20*time.Millisecond, func() { cancel(errStop) })
	start := time.Now()
	_, err := p.Stream(ctx, simpleRequest(), nil)
	if !errors.Is(err, errStop) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want both the cause and context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stream took %v after cancel", d)
	}
	waitDisconnect(t, srv)
}

func waitDisconnect(t *testing.T, srv *llmfake.Server) {
	t.Helper()
	select {
	case <-srv.Disconnected():
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the client disconnect")
	}
}

// TestBaseURLNamesTheServer: the provider says which server it calls
// (llm.Endpoint), also through the retry policy that wraps it, with the
// scheme's port when the URL has none.
func TestBaseURLNamesTheServer(t *testing.T) {
	srv := llmfake.NewOpenAI(t)
	p := newProvider(t, srv)
	host, port := llm.ServerOf(llm.WithRetry(p, llm.DefaultRetryPolicy))
	if want := strings.TrimPrefix(srv.URL, "http://"); host+":"+strconv.Itoa(port) != want {
		t.Errorf("server %s:%d, want %s", host, port, want)
	}
	for name, want := range map[string]string{"openai": "api.openai.com:443", "openrouter": "openrouter.ai:443"} {
		p, err := openai.New(openai.Config{Name: name, APIKey: "sk-test"})
		if err != nil {
			t.Fatal(err)
		}
		if host, port := llm.ServerOf(p); host+":"+strconv.Itoa(port) != want {
			t.Errorf("%s: server %s:%d, want %s", name, host, port, want)
		}
	}
}

package agent_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tracing"
)

// startSampler samples every span and keeps the attributes each span
// had when it started: what a sampler can decide by.
type startSampler struct {
	mu    sync.Mutex
	attrs map[string][]attribute.KeyValue // by span name
}

func (s *startSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attrs[p.Name] = append([]attribute.KeyValue(nil), p.Attributes...)
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}

func (s *startSampler) Description() string { return "startSampler" }

func (s *startSampler) at(name string) map[attribute.Key]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return attrMap(s.attrs[name])
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// TestChatSpansOfARealProvider: a run against an OpenAI-compatible
// server (the real provider over the wire, behind the retry policy)
// records on each chat span the provider's own finish reason, every
// input token (cache reads included, and also apart), the server
// called, the response's ID and the conversation; the operation, the
// provider and the model are there at the start, for samplers.
func TestChatSpansOfARealProvider(t *testing.T) {
	srv := llmfake.NewOpenAI(t,
		llmfake.Turn{ToolCalls: []llmfake.ToolCall{{ID: "call_1", Name: "echo", Args: `{"text":"x"}`}},
			Usage: llm.Usage{InputTokens: 100, OutputTokens: 5}},
		llmfake.Turn{Text: "done", Usage: llm.Usage{InputTokens: 200, CacheReadTokens: 800, OutputTokens: 7}})
	p, err := openai.New(openai.Config{Name: "openai", APIKey: "sk-test", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	sampler := &startSampler{attrs: map[string][]attribute.KeyValue{}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })

	res := run(t, agent.Config{Model: llm.Model{Provider: llm.WithRetry(p, llm.DefaultRetryPolicy), ID: "gpt-test"},
		Tools: registry(t, echoTool()), Tracer: tracing.NewProvider(tp, false, nil).Tracer(),
		Caller: tool.Caller{AgentID: "ava", SessionKey: "ava:test:otel"}}, context.Background())
	if res.Status != lifecycle.Success {
		t.Fatalf("run %s: %v", res.Status, res.Err)
	}

	var chats []map[attribute.Key]string
	var agentSpan map[attribute.Key]string
	for _, s := range tracetest.SpanStubs(exp.GetSpans()) {
		switch s.Name {
		case "chat gpt-test":
			chats = append(chats, attrMap(s.Attributes))
		case "invoke_agent ava":
			agentSpan = attrMap(s.Attributes)
		}
	}
	if len(chats) != 2 || agentSpan == nil {
		t.Fatalf("%d chat spans, agent span %v", len(chats), agentSpan)
	}
	_, port, _ := net.SplitHostPort(srv.URL[len("http://"):])
	for i, want := range []map[attribute.Key]string{
		{"gen_ai.response.finish_reasons": `["tool_calls"]`, "gen_ai.usage.input_tokens": "100", "gen_ai.usage.cache_read.input_tokens": "0"},
		{"gen_ai.response.finish_reasons": `["stop"]`, "gen_ai.usage.input_tokens": "1000", "gen_ai.usage.cache_read.input_tokens": "800",
			"gen_ai.usage.output_tokens": "7"},
	} {
		want["server.address"], want["server.port"] = "127.0.0.1", port
		want["gen_ai.conversation.id"] = "ava:test:otel"
		want["gen_ai.operation.name"], want["gen_ai.provider.name"], want["gen_ai.request.model"] = "chat", "openai", "gpt-test"
		for k, v := range want {
			if got := chats[i][k]; got != v {
				t.Errorf("chat %d: %s = %q, want %q", i, k, got, v)
			}
		}
		if id := chats[i]["gen_ai.response.id"]; len(id) < len("chatcmpl-x") || id[:len("chatcmpl-")] != "chatcmpl-" {
			t.Errorf("chat %d: gen_ai.response.id %q, want the completion's ID", i, id)
		}
	}
	if chats[0]["gen_ai.response.id"] == chats[1]["gen_ai.response.id"] {
		t.Errorf("both calls have response ID %q", chats[0]["gen_ai.response.id"])
	}
	if got := agentSpan["gen_ai.usage.input_tokens"]; got != strconv.Itoa(100+200+800) {
		t.Errorf("invoke_agent input tokens %s, want every input token of the run", got)
	}

	// What a sampler sees at the start.
	for name, want := range map[string]map[attribute.Key]string{
		"chat gpt-test":     {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test"},
		"invoke_agent ava":  {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test", "gen_ai.agent.name": "ava"},
		"execute_tool echo": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo"},
	} {
		got := sampler.at(name)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s at start: %s = %q, want %q (all: %v)", name, k, got[k], v, got)
			}
		}
	}
}

package main_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/internal/otlptest"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/tracing"
)

// TestRunExportsOTLPTraces: `ava run` with OTEL_EXPORTER_OTLP_ENDPOINT
// sends its turn's trace over OTLP/HTTP (protobuf) to a collector on
// 127.0.0.1: the orchestrator's invoke_agent span, its model and tool
// calls, and the delegated subagent's span under the tool call that
// spawned it.
func TestRunExportsOTLPTraces(t *testing.T) {
	col := otlptest.New(t)
	root := t.TempDir()
	_, errOut, code := ava(t, map[string]string{"AVA_DATA_ROOT": root, "OTEL_EXPORTER_OTLP_ENDPOINT": col.URL,
		"OTEL_EXPORTER_OTLP_HEADERS": "x-team=ava-tests"}, "run", "--offline", "hello SECRET_PROMPT")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	spans := col.Spans()
	byID := map[string]otlptest.Span{}
	var roots, subs, chats []otlptest.Span
	for _, s := range spans {
		byID[s.ID()] = s
		switch {
		case s.Name == "invoke_agent orchestrator":
			roots = append(roots, s)
		case strings.HasPrefix(s.Name, "invoke_agent "):
			subs = append(subs, s)
		case strings.HasPrefix(s.Name, "chat "):
			chats = append(chats, s)
		}
		if s.Resource["service.name"] != "ava" {
			t.Errorf("span %s: service.name %q", s.Name, s.Resource["service.name"])
		}
		for _, kv := range s.Attributes {
			if strings.Contains(kv.String(), "SECRET_PROMPT") {
				t.Errorf("span %s records the prompt: %s", s.Name, kv)
			}
		}
	}
	if len(roots) != 1 || roots[0].ParentID() != "" || len(subs) != 1 || len(chats) < 3 {
		t.Fatalf("spans: %d orchestrator, %d subagent, %d chat (%d in all)", len(roots), len(subs), len(chats), len(spans))
	}
	root0, sub := roots[0], subs[0]
	for _, s := range spans {
		if s.TraceID() != root0.TraceID() {
			t.Errorf("span %s is in trace %s, not the turn's %s", s.Name, s.TraceID(), root0.TraceID())
		}
	}
	spawn, ok := byID[sub.ParentID()]
	if !ok || !strings.HasPrefix(spawn.Name, "execute_tool spawn_subagent") || spawn.ParentID() != root0.ID() {
		t.Fatalf("subagent span's parent %q (%v), want the orchestrator's spawn tool call", spawn.Name, ok)
	}
	if !strings.HasPrefix(sub.Attr("gen_ai.agent.id"), "S-") || sub.Attr("ava.status") != "success" ||
		sub.Attr("gen_ai.operation.name") != "invoke_agent" || spawn.Attr("gen_ai.tool.call.id") == "" {
		t.Errorf("subagent span attributes %v", sub.Attributes)
	}
	if root0.Attr("gen_ai.provider.name") != "scripted" || root0.Attr("ava.cost_cents") == "" {
		t.Errorf("orchestrator span attributes %v", root0.Attributes)
	}
	for _, c := range chats {
		if c.Attr("gen_ai.operation.name") != "chat" || c.Attr("gen_ai.usage.input_tokens") == "" || c.Attr("gen_ai.response.finish_reasons") == "" {
			t.Errorf("chat span %s attributes %v", c.Name, c.Attributes)
		}
	}
	if h := col.Headers(); len(h) == 0 || h[0].Get("x-team") != "ava-tests" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: %v", h)
	}
	checkScope(t, spans)
}

// checkScope: every span's instrumentation scope names Ava, with the
// binary's version (ava --version) and the conventions' schema URL.
func checkScope(t *testing.T, spans []otlptest.Span) {
	t.Helper()
	out, _, _ := ava(t, nil, "--version")
	version := strings.TrimPrefix(strings.TrimSpace(out), "ava ")
	for _, s := range spans {
		if s.Scope.GetName() != tracing.InstrumentationName || s.Scope.GetVersion() != version || s.SchemaURL != tracing.SchemaURL {
			t.Errorf("span %s: scope %q version %q (want %q), schema %q", s.Name, s.Scope.GetName(), s.Scope.GetVersion(), version, s.SchemaURL)
			return
		}
	}
}

// TestRunTracesAnOpenAICompatibleCall: `ava run` against an
// OpenAI-compatible server exports a chat span with the server's own
// finish reason ("stop", not Ava's "end_turn"), every input token
// (cache reads included, and apart), the server's address and port,
// the response's ID and the conversation.
func TestRunTracesAnOpenAICompatibleCall(t *testing.T) {
	col := otlptest.New(t)
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Text: "Hello from the fake model.",
		Usage: llm.Usage{InputTokens: 200, CacheReadTokens: 800, OutputTokens: 6}})
	_, errOut, code := ava(t, map[string]string{"OPENAI_BASE_URL": fake.URL + "/v1", "AVA_MODEL": "openai/llama3.2",
		"OTEL_EXPORTER_OTLP_ENDPOINT": col.URL}, "run", "hello")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	spans := col.Spans()
	var chat *otlptest.Span
	for i, s := range spans {
		if s.Name == "chat llama3.2" {
			chat = &spans[i]
		}
	}
	if chat == nil {
		t.Fatalf("no chat span among %d", len(spans))
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(fake.URL, "http://"))
	for k, want := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "llama3.2",
		"gen_ai.response.finish_reasons": "stop", "gen_ai.usage.input_tokens": "1000",
		"gen_ai.usage.cache_read.input_tokens": "800", "gen_ai.usage.output_tokens": "6",
		"server.address": host, "server.port": port,
	} {
		if got := chat.Attr(k); got != want {
			t.Errorf("chat span %s = %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(chat.Attr("gen_ai.response.id"), "chatcmpl-") || !strings.HasPrefix(chat.Attr("gen_ai.conversation.id"), "ava:") {
		t.Errorf("chat span response ID %q, conversation %q", chat.Attr("gen_ai.response.id"), chat.Attr("gen_ai.conversation.id"))
	}
	checkScope(t, spans)
}

// TestRunWithUnreachableOTLPCollector: a collector that is not there
// neither fails nor stalls a run; the outage is logged once.
func TestRunWithUnreachableOTLPCollector(t *testing.T) {
	col := otlptest.New(t)
	url := col.URL
	col.Close()
	start := time.Now()
	out, errOut, code := ava(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TIMEOUT": "1000"},
		"run", "--offline", "hello")
	if code != 0 || out == "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(errOut, "trace export failed"); n != 1 {
		t.Errorf("outage logged %d times:\n%s", n, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("run took %s", d)
	}
}

// TestRunRefusesUnknownOTLPProtocol names the variable and the choices.
func TestRunRefusesUnknownOTLPProtocol(t *testing.T) {
	_, errOut, code := ava(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		"run", "--offline", "hello")
	if code == 0 || !strings.Contains(errOut, "OTEL_EXPORTER_OTLP_PROTOCOL") || !strings.Contains(errOut, "http/protobuf") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

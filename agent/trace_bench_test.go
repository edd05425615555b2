package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tracing"
)

// discard is an exporter that drops every span.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// benchRun runs a loop of two model calls and one tool call (four spans
// when traced) against an instant model: what tracing adds to a run
// itself, without a network or a store.
func benchRun(b *testing.B, tr *tracing.Tracer) {
	calls := 0
	model := providerFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		calls++
		if calls%2 == 1 {
			return &llm.Response{Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}, StopReason: llm.StopToolUse, Model: "m",
				Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c",
					ToolName: "echo", Input: json.RawMessage(`{"text":"x"}`)}}}}, nil
		}
		return &llm.Response{Usage: llm.Usage{InputTokens: 120, OutputTokens: 5}, StopReason: llm.StopEndTurn, Model: "m",
			Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("done")}}}, nil
	})
	reg, err := tool.NewRegistry(echoTool())
	if err != nil {
		b.Fatal(err)
	}
	cfg := agent.Config{Model: llm.Model{ID: "m", Provider: model}, Tools: reg, Tracer: tr, AgentName: "researcher",
		Caller: tool.Caller{AgentID: "S-000001", SessionKey: "ava:subagent:S-000001"}}
	b.ReportAllocs()
	for b.Loop() {
		if res := agent.New(cfg).Run(context.Background(), nil, llm.UserText("go")); res.Status != "success" {
			b.Fatal(res.Status, res.Err)
		}
	}
}

// BenchmarkRunUntraced: a run with tracing off.
func BenchmarkRunUntraced(b *testing.B) { benchRun(b, nil) }

// BenchmarkRunTraced: the same run with tracing on (the SDK's batch
// processor, spans dropped by the exporter).
func BenchmarkRunTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	benchRun(b, tracing.NewProvider(tp, false, nil).Tracer())
}

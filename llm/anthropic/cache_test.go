package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// breakpoints lists where a request body holds cache_control, as
// "tools.N", "system.N" and "messages.I.J".
func breakpoints(t *testing.T, body map[string]any) []string {
	t.Helper()
	var out []string
	marked := func(v any) bool { m, _ := v.(map[string]any); return m["cache_control"] != nil }
	for i, v := range asList(body["tools"]) {
		if marked(v) {
			out = append(out, "tools."+itoa(i))
		}
	}
	for i, v := range asList(body["system"]) {
		if marked(v) {
			out = append(out, "system."+itoa(i))
		}
	}
	for i, m := range asList(body["messages"]) {
		for j, b := range asList(m.(map[string]any)["content"]) {
			if marked(b) {
				out = append(out, "messages."+itoa(i)+"."+itoa(j))
			}
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// Every call of an agent loop carries four breakpoints: the last tool,
// the system prompt, the message before the last (the previous call's
// conversation and its answer) and the last block; a thinking block is
// passed over for the block before it.
func TestCacheBreakpoints(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "a"}, llmfake.Turn{Text: "b"})
	p := newProvider(t, srv)
	tools := []llm.ToolDef{{Name: "read_file", Description: "Read."}, {Name: "now", Description: "Time."}}
	first := &llm.Request{Model: testModel, System: "You are Ava.", Tools: tools, Messages: []llm.Message{llm.UserText("go")}}
	later := &llm.Request{Model: testModel, System: "You are Ava.", Tools: tools, Messages: []llm.Message{
		llm.UserText("go"),
		{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockToolCall, ToolCallID: "t1", ToolName: "read_file", Input: json.RawMessage(`{}`)},
			{Type: llm.BlockThinking, Text: "hmm", Signature: "sig"},
		}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("t1", "text", false), llm.Text("and now?")}},
	}}
	for _, req := range []*llm.Request{first, later} {
		if _, err := p.Stream(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"tools.1 system.0 messages.0.0", "tools.1 system.0 messages.1.0 messages.2.1"}
	for i, r := range srv.Requests() {
		got := strings.Join(breakpoints(t, r.Body), " ")
		if got != want[i] {
			t.Errorf("request %d: breakpoints %s, want %s", i+1, got, want[i])
		}
	}
}

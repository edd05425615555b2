package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
)

func TestEstimateTokensByCharacterClass(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"the quick brown fox", 1 + 2 + 2 + 1}, // letters: a token per 4, spaces free
		{"12345", 2},                           // digits: a token per 3
		{"1,2,3", 5},                           // each symbol a token
		{`{"a":1}`, 7},                         // 5 symbols, a letter, a digit
		{"日本", 3},                              // 6 non-ASCII bytes: a token per 2
		{"a\n\n\nb", 3},                        // a run of line breaks is one token
	} {
		if got := estimateTokens(c.in); got != c.want {
			t.Errorf("estimateTokens(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestEstimateRawBlockOnce: a block kept as the provider's raw JSON (an
// OpenAI output item holding the text, Anthropic's server blocks) is
// counted once, by its raw JSON, not again by the fields read from it.
func TestEstimateRawBlockOnce(t *testing.T) {
	text := strings.Repeat("Transcription costs a little per minute. ", 50)
	raw, _ := json.Marshal(map[string]any{"type": "message", "id": "msg_1", "content": []any{
		map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: text, Raw: raw, Provider: "openai"}}}
	if got, want := messagesTokens([]llm.Message{msg}), messageOverheadTokens+estimateTokens(string(raw)); got != want {
		t.Errorf("messagesTokens = %d, want %d (the raw item once)", got, want)
	}
}

// BenchmarkEstimateFirstRequest is what the cost bound adds before a
// priced run's first call: a subagent-sized system prompt (~3 KB), task
// and five tool definitions.
func BenchmarkEstimateFirstRequest(b *testing.B) {
	def := llm.ToolDef{Name: "web_search", Description: strings.Repeat("Search the web for a query. ", 5),
		Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to search for"}},"required":["query"]}`)}
	req := &llm.Request{System: strings.Repeat("You are a specialized researcher subagent. Be precise.\n", 55),
		Messages: []llm.Message{llm.UserText("Begin the task: find five competitors and their prices")},
		Tools:    []llm.ToolDef{def, def, def, def, def}}
	r := &run{a: New(Config{Model: llm.Model{Price: llm.Price{Input: 300, Output: 1500}, Priced: true}})}
	for b.Loop() {
		r.estimateInput(req)
	}
}

// TestEstimateSharedRawOnce: two blocks read from one output item (a
// search call and its result) share its raw JSON, sent once: counted once.
func TestEstimateSharedRawOnce(t *testing.T) {
	raw := json.RawMessage(`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q","sources":[{"url":"https://example.com/a-long-page-address"}]}}`)
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		{Type: llm.BlockServerToolUse, Raw: raw, Provider: "openai"},
		{Type: llm.BlockServerToolResult, Raw: append(json.RawMessage(nil), raw...), Provider: "openai"}}}
	if got, want := messagesTokens([]llm.Message{msg}), messageOverheadTokens+estimateTokens(string(raw)); got != want {
		t.Errorf("messagesTokens = %d, want %d (the shared item once)", got, want)
	}
}

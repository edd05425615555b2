package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
)

func TestInferStatus(t *testing.T) {
	cases := []struct {
		typ, code string
		want      int
	}{
		{"server_error", "null", 500},
		{"", "502", 502},
		{"", "200", 500},
		{"requests", `"rate_limit_exceeded"`, 429},
		{"overloaded_error", "", 529},
		{"invalid_request_error", `"context_length_exceeded"`, 400},
		{"authentication_error", "", 401},
		{"", "", 500},
	}
	for _, c := range cases {
		if got := inferStatus(c.typ, json.RawMessage(c.code)); got != c.want {
			t.Errorf("inferStatus(%q, %s) = %d, want %d", c.typ, c.code, got, c.want)
		}
	}
}

func TestBodyWatchFindsDoneAcrossReads(t *testing.T) {
	cases := []struct {
		name   string
		reads  []string
		wantOK bool
	}{
		{"one read", []string{"data: {}\n\ndata: [DONE]\n\n"}, true},
		{"split marker", []string{"data: {}\n\ndata: [DO", "NE]\n\n"}, true},
		{"no space, CRLF", []string{"data:[DONE]\r\n\r\n"}, true},
		{"inside content", []string{`data: {"content":"data: [DONE]"}` + "\n\n"}, false},
		{"long line ending in marker", []string{"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "data: [DONE]\n"}, false},
		{"unterminated", []string{"data: [DONE]"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := &exchange{}
			b := &bodyWatch{ex: ex}
			for _, r := range c.reads {
				b.scan([]byte(r))
			}
			if ex.sawDone() != c.wantOK {
				t.Errorf("sawDone = %v, want %v", ex.sawDone(), c.wantOK)
			}
		})
	}
}

func TestMaxTokensFieldPerServer(t *testing.T) {
	cases := []struct {
		base, field string
	}{
		{"", "max_completion_tokens"},
		{"https://api.openai.com/v1", "max_completion_tokens"},
		{"https://openrouter.ai/api/v1", "max_tokens"},
		{"http://localhost:11434/v1", "max_tokens"},
	}
	for _, c := range cases {
		p, err := New(Config{APIKey: "k", BaseURL: c.base})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := p.chatBody(&llm.Request{Model: "m", MaxTokens: 99, Messages: []llm.Message{llm.UserText("x")}})
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		if body[c.field] != float64(99) || len(body) != 5 { // model, messages, stream_options, stream, the cap
			t.Errorf("base %q: body %s, want only %s as the cap", c.base, raw, c.field)
		}
	}
}

func TestStopReason(t *testing.T) {
	cases := []struct {
		finish   string
		hasCalls bool
		want     llm.StopReason
	}{
		{"stop", false, llm.StopEndTurn},
		{"stop", true, llm.StopToolUse},
		{"tool_calls", true, llm.StopToolUse},
		{"length", false, llm.StopMaxTokens},
		{"content_filter", false, llm.StopOther},
	}
	for _, c := range cases {
		if got := stopReason(c.finish, c.hasCalls); got != c.want {
			t.Errorf("stopReason(%q, %v) = %q, want %q", c.finish, c.hasCalls, got, c.want)
		}
	}
}

// TestFunctionJSON: a tool's schema goes out as it is, an empty one as
// an empty object schema, and one that is not a JSON object is refused
// naming the tool.
func TestFunctionJSON(t *testing.T) {
	raw, err := functionJSON(llm.ToolDef{Name: "f", Schema: json.RawMessage(` {"type":"object","properties":{"a":{"type":"string"}}} `)})
	if err != nil || string(raw) != `{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}` {
		t.Fatalf("%s %v", raw, err)
	}
	raw, err = functionJSON(llm.ToolDef{Name: "g", Description: "d"})
	if err != nil || string(raw) != `{"name":"g","description":"d","parameters":{"type":"object","properties":{}}}` {
		t.Fatalf("%s %v", raw, err)
	}
	for _, bad := range []string{`[1]`, `null`, `{"a":`} {
		if _, err := functionJSON(llm.ToolDef{Name: "h", Schema: json.RawMessage(bad)}); err == nil || !strings.Contains(err.Error(), "tool h") {
			t.Errorf("schema %s: %v", bad, err)
		}
	}
}

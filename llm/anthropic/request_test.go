package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
	"github.com/avaagent/ava/llm/llmfake"
)

// bodyJSON re-decodes part of a recorded body for comparison with a
// literal.
func bodyJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestThinkingCapturedAndSentBack(t *testing.T) {
	srv := llmfake.NewAnthropic(t,
		llmfake.Turn{
			Thinking:          "The user wants the file. I should call read_file on a.txt first.",
			ThinkingSignature: "sig-ErUBCkYIAxgCIkD",
			Text:              "Reading.",
			ToolCalls:         []llmfake.ToolCall{{ID: "toolu_9", Name: "read_file", Args: `{"path":"a.txt"}`}},
		},
		llmfake.Turn{Text: "Done."},
	)
	p := newProvider(t, srv)
	req := userRequest("show a.txt")
	req.ThinkingBudget = 2048
	var d deltas

	resp, err := p.Stream(context.Background(), req, d.add)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	first := resp.Message.Content[0]
	if first.Type != llm.BlockThinking || first.Signature != "sig-ErUBCkYIAxgCIkD" ||
		first.Text != "The user wants the file. I should call read_file on a.txt first." {
		t.Errorf("thinking block = %+v", first)
	}
	if thought, _ := d.joined(llm.DeltaThinking); thought != first.Text {
		t.Errorf("thinking deltas = %q, want %q", thought, first.Text)
	}

	r0 := srv.Requests()[0].Body
	if got := bodyJSON(t, lookup(t, r0, "thinking")); got != `{"budget_tokens":2048,"type":"enabled"}` {
		t.Errorf("thinking param = %s", got)
	}
	if mt := lookup(t, r0, "max_tokens").(float64); mt <= 2048 {
		t.Errorf("max_tokens = %v, want more than the 2048 budget", mt)
	}

	req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.ToolResult("toolu_9", "hello from a.txt", false),
	}})
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatalf("second Stream: %v", err)
	}
	sent := lookup(t, srv.Requests()[1].Body, "messages", 1, "content")
	want := `[{"signature":"sig-ErUBCkYIAxgCIkD","thinking":"The user wants the file. I should call read_file on a.txt first.","type":"thinking"},` +
		`{"text":"Reading.","type":"text"},` +
		`{"cache_control":{"type":"ephemeral"},"id":"toolu_9","input":{"path":"a.txt"},"name":"read_file","type":"tool_use"}]`
	if got := bodyJSON(t, sent); got != want {
		t.Errorf("assistant turn sent back:\n got %s\nwant %s", got, want)
	}
}

func TestThinkingRaisesMaxTokens(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "ok"})
	req := userRequest("hi")
	req.MaxTokens = 4000
	req.ThinkingBudget = 10000
	if _, err := newProvider(t, srv).Stream(context.Background(), req, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if mt := lookup(t, srv.Requests()[0].Body, "max_tokens"); mt != float64(14000) {
		t.Errorf("max_tokens = %v, want 14000 (budget + cap)", mt)
	}
}

func TestRequestMapping(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "ok"})
	req := &llm.Request{
		Model:     testModel,
		System:    "You are Ava.",
		MaxTokens: 1000,
		Tools: []llm.ToolDef{
			{Name: "read_file", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`)},
			{Name: "now", Description: "The time."},
		},
		Messages: []llm.Message{
			llm.UserText("read two files"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockRedactedThinking, Data: "EmwKAhgBEgy"},
				{Type: llm.BlockThinking, Text: "no signature: from another provider"},
				llm.Text(""),
				{Type: llm.BlockToolCall, ToolCallID: "t1", ToolName: "read_file", Input: json.RawMessage(`{"path":"a"}`)},
				{Type: llm.BlockToolCall, ToolCallID: "t2", ToolName: "read_file", Input: json.RawMessage(`{"path": "b`)},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				llm.ToolResult("t1", "contents of a", false),
				llm.ToolResult("t2", "arguments are not valid JSON", true),
			}},
		},
	}
	if _, err := newProvider(t, srv).Stream(context.Background(), req, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	body := srv.Requests()[0].Body
	checks := []struct {
		path []any
		want string
	}{
		{[]any{"system"}, `[{"cache_control":{"type":"ephemeral"},"text":"You are Ava.","type":"text"}]`},
		{[]any{"max_tokens"}, `1000`},
		{[]any{"tools", 0}, `{"description":"Read a file.","input_schema":{"additionalProperties":false,"properties":{"path":{"minLength":1,"type":"string"}},"required":["path"],"type":"object"},"name":"read_file"}`},
		{[]any{"tools", 1}, `{"cache_control":{"type":"ephemeral"},"description":"The time.","input_schema":{"properties":{},"type":"object"},"name":"now"}`},
		{[]any{"messages", 1, "content"}, `[{"data":"EmwKAhgBEgy","type":"redacted_thinking"},` +
			`{"id":"t1","input":{"path":"a"},"name":"read_file","type":"tool_use"},` +
			`{"cache_control":{"type":"ephemeral"},"id":"t2","input":{},"name":"read_file","type":"tool_use"}]`},
		{[]any{"messages", 2, "content"}, `[{"content":[{"text":"contents of a","type":"text"}],"tool_use_id":"t1","type":"tool_result"},` +
			`{"cache_control":{"type":"ephemeral"},"content":[{"text":"arguments are not valid JSON","type":"text"}],"is_error":true,"tool_use_id":"t2","type":"tool_result"}]`},
	}
	for _, c := range checks {
		if got := bodyJSON(t, lookup(t, body, c.path...)); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.path, got, c.want)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	good := func() *llm.Request { return userRequest("hi") }
	cases := map[string]struct {
		req  *llm.Request
		want string
	}{
		"nil":          {nil, "request is nil"},
		"no model":     {&llm.Request{Messages: good().Messages}, "no model"},
		"no messages":  {&llm.Request{Model: testModel}, "no messages"},
		"bad role":     {&llm.Request{Model: testModel, Messages: []llm.Message{{Role: "system", Content: []llm.Block{llm.Text("x")}}}}, `unknown role "system"`},
		"empty msg":    {&llm.Request{Model: testModel, Messages: []llm.Message{{Role: llm.RoleUser}}}, "no content"},
		"bad block":    {&llm.Request{Model: testModel, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: "video"}}}}}, `unknown block type "video"`},
		"empty image":  {&llm.Request{Model: testModel, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage, Ref: "A-1"}}}}}, `image A-1 () has no data`},
		"call no id":   {&llm.Request{Model: testModel, Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolCall, ToolName: "x"}}}}}, "needs an ID"},
		"small budget": {&llm.Request{Model: testModel, Messages: good().Messages, ThinkingBudget: 100}, "below the API minimum"},
		"array schema": {&llm.Request{Model: testModel, Messages: good().Messages, Tools: []llm.ToolDef{{Name: "x", Schema: json.RawMessage(`[]`)}}}, "not a JSON object"},
		"string type":  {&llm.Request{Model: testModel, Messages: good().Messages, Tools: []llm.ToolDef{{Name: "x", Schema: json.RawMessage(`{"type":"string"}`)}}}, `want "object"`},
	}
	srv := llmfake.NewAnthropic(t)
	p := newProvider(t, srv)
	for name, c := range cases {
		_, err := p.Stream(context.Background(), c.req, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, c.want)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("invalid requests reached the server %d times", n)
	}
}

func TestDefaultMaxTokensFromConfig(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "ok"})
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client(), MaxTokens: 321})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), userRequest("hi"), nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if diff := cmp.Diff(float64(321), lookup(t, srv.Requests()[0].Body, "max_tokens")); diff != "" {
		t.Errorf("max_tokens (-want +got):\n%s", diff)
	}
}

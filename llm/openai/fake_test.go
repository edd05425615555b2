package openai_test

import (
	"errors"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
)

// The fake's non-streaming answer, read by the official SDK: proof that it
// is the real wire format.
func TestFakeNonStreamingThroughSDK(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{
		Text:      "Here.",
		ToolCalls: []llmfake.ToolCall{{ID: "call_7", Name: "ls", Args: `{"dir":"."}`}},
		Usage:     llm.Usage{InputTokens: 3, OutputTokens: 4, CacheReadTokens: 5},
	})
	chat := sdk.NewChatCompletionService(option.WithBaseURL(srv.URL+"/v1"), option.WithHTTPClient(srv.Client()),
		option.WithAPIKey("k"), option.WithMaxRetries(0))
	params := sdk.ChatCompletionNewParams{Model: "gpt-test", Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("hi")}}

	got, err := chat.New(t.Context(), params)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c := got.Choices[0]
	if c.Message.Content != "Here." || c.FinishReason != "tool_calls" || got.Model != "gpt-test" {
		t.Errorf("choice = %+v, model %q", c, got.Model)
	}
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_7" || c.Message.ToolCalls[0].Function.Arguments != `{"dir":"."}` {
		t.Errorf("tool calls = %+v", c.Message.ToolCalls)
	}
	if got.Usage.PromptTokens != 8 || got.Usage.PromptTokensDetails.CachedTokens != 5 || got.Usage.CompletionTokens != 4 {
		t.Errorf("usage = %+v, want prompt 8 (cached included), cached 5, completion 4", got.Usage)
	}
	if _, ok := srv.Requests()[0].Body["stream"]; ok {
		t.Errorf("non-streaming request carried stream")
	}

	// An empty queue answers 500 with the fake's message.
	srv2 := llmfake.NewOpenAI(t)
	_, err = newProvider(t, srv2).Stream(t.Context(), simpleRequest(), nil)
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "no scripted turn left") {
		t.Errorf("empty queue: err = %v", err)
	}
}

func BenchmarkStream(b *testing.B) {
	text := strings.Repeat("word ", 200) // 200 text chunks
	srv := llmfake.NewOpenAI(b)
	srv.Respond = func(llmfake.Request) llmfake.Turn {
		return llmfake.Turn{Text: text, ToolCalls: []llmfake.ToolCall{{ID: "c", Name: "t", Args: `{"a":1}`}}, Usage: llm.Usage{InputTokens: 1}}
	}
	p, err := openai.New(openai.Config{BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	req := simpleRequest()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Stream(b.Context(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

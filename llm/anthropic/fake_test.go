package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// TestFakeNonStreaming checks the fake's non-streaming answer against the
// SDK's own decoder: the provider only streams, but other callers of the
// fake may not.
func TestFakeNonStreaming(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{
		Thinking: "hmm", ThinkingSignature: "sig", Text: "hello",
		ToolCalls: []llmfake.ToolCall{{ID: "toolu_x", Name: "grep", Args: `{"q":"a"}`}},
		Usage:     llm.Usage{InputTokens: 4, OutputTokens: 9, CacheReadTokens: 2, CacheWriteTokens: 1},
		Model:     "claude-reported",
	})
	client := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithAPIKey("k"),
		option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "claude-asked", MaxTokens: 100,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	if len(msg.Content) != 3 || msg.Content[0].Thinking != "hmm" || msg.Content[0].Signature != "sig" ||
		msg.Content[1].Text != "hello" || msg.Content[2].Name != "grep" || string(msg.Content[2].Input) != `{"q":"a"}` {
		t.Errorf("content = %s", msg.RawJSON())
	}
	if msg.StopReason != sdk.StopReasonToolUse || msg.Model != "claude-reported" ||
		msg.Usage.InputTokens != 4 || msg.Usage.OutputTokens != 9 ||
		msg.Usage.CacheReadInputTokens != 2 || msg.Usage.CacheCreationInputTokens != 1 {
		t.Errorf("message = %s", msg.RawJSON())
	}
	if stream, ok := srv.Requests()[0].Body["stream"]; ok {
		t.Errorf("non-streaming request sent stream = %v", stream)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(msg.RawJSON()), &back); err != nil || back["id"] == "" {
		t.Errorf("raw message is not a JSON object with an id: %v", err)
	}
}

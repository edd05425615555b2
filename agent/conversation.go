package agent

import (
	"context"

	"github.com/avaagent/ava/llm"
)

type conversationKey struct{}

// withConversation gives tool calls the conversation before the turn that
// made them.
func withConversation(ctx context.Context, msgs []llm.Message) context.Context {
	return context.WithValue(ctx, conversationKey{}, msgs)
}

// ConversationFrom returns, inside a tool call, the calling agent's
// conversation up to (not including) the assistant turn that made the
// call: a history that a forked subagent can continue from without
// dangling tool calls. It returns nil outside a tool call.
func ConversationFrom(ctx context.Context) []llm.Message {
	msgs, _ := ctx.Value(conversationKey{}).([]llm.Message)
	return append([]llm.Message(nil), msgs...)
}

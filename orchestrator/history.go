package orchestrator

import (
	"context"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/transcript"
)

// DefaultHistoryLimit is how many stored messages a turn's prompt holds.
const DefaultHistoryLimit = 200

// StoreHistory keeps sessions' conversations in the store. Subagent
// results announced into the session ([Subagent] messages) are part of it,
// so they reach the orchestrator's next prompt, once, without having
// started a turn themselves.
type StoreHistory struct {
	Store store.SessionStore
	// Limit caps the messages loaded (0: DefaultHistoryLimit).
	Limit int
}

// Load implements History. A window that would start inside a tool
// exchange is trimmed to a clean start.
func (h StoreHistory) Load(ctx context.Context, session string) ([]llm.Message, error) {
	limit := h.Limit
	if limit == 0 {
		limit = DefaultHistoryLimit
	}
	stored, err := h.Store.Messages(ctx, session, limit)
	if err != nil {
		return nil, err
	}
	out, err := transcript.FromStore(stored)
	if err != nil {
		return nil, err
	}
	return cleanStart(out), nil
}

// cleanStart drops leading messages until a user message that holds no
// tool results, so a truncated window never opens mid tool exchange.
func cleanStart(msgs []llm.Message) []llm.Message {
	for i, m := range msgs {
		if m.Role != llm.RoleUser {
			continue
		}
		clean := true
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				clean = false
			}
		}
		if clean {
			return msgs[i:]
		}
	}
	return nil
}

// Save implements History: a turn's messages are stored together, in
// one transaction, so nothing lands between a tool call and its result.
func (h StoreHistory) Save(ctx context.Context, session string, msgs []llm.Message) error {
	out, err := transcript.ToStore(session, store.SenderAva, msgs)
	if err != nil {
		return err
	}
	return h.Store.AppendMessages(ctx, out)
}

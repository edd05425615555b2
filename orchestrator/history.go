package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
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

// Load implements History. Consecutive messages of one role are merged,
// as the providers want roles to alternate; a window that would start
// inside a tool exchange is trimmed to a clean start.
func (h StoreHistory) Load(ctx context.Context, session string) ([]llm.Message, error) {
	limit := h.Limit
	if limit == 0 {
		limit = DefaultHistoryLimit
	}
	stored, err := h.Store.Messages(ctx, session, limit)
	if err != nil {
		return nil, err
	}
	var out []llm.Message
	for _, sm := range stored {
		m, err := decode(sm)
		if err != nil {
			return nil, fmt.Errorf("message %d of %s: %w", sm.ID, session, err)
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = resultsFirst(append(out[n-1].Content, m.Content...))
			continue
		}
		out = append(out, m)
	}
	return cleanStart(out), nil
}

// resultsFirst orders tool results before other blocks (stable), as a
// provider expects them right after the turn that called the tools; a
// [Subagent] message stored between a turn's tool call and its results
// would otherwise come between them.
func resultsFirst(blocks []llm.Block) []llm.Block {
	out := make([]llm.Block, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == llm.BlockToolResult {
			out = append(out, b)
		}
	}
	for _, b := range blocks {
		if b.Type != llm.BlockToolResult {
			out = append(out, b)
		}
	}
	return out
}

func decode(sm store.Message) (llm.Message, error) {
	if len(sm.Blocks) > 0 {
		var m llm.Message
		if err := json.Unmarshal(sm.Blocks, &m); err != nil {
			return llm.Message{}, err
		}
		return m, nil
	}
	role := llm.RoleUser
	if sm.Role == store.RoleAssistant {
		role = llm.RoleAssistant
	}
	return llm.Message{Role: role, Content: []llm.Block{llm.Text(sm.Text)}}, nil
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

// Save implements History.
func (h StoreHistory) Save(ctx context.Context, session string, msgs []llm.Message) error {
	for _, m := range msgs {
		blocks, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
		sm := store.Message{SessionKey: session, Role: store.RoleUser, Sender: store.SenderUser, Text: m.TextContent(), Blocks: blocks}
		if m.Role == llm.RoleAssistant {
			sm.Role, sm.Sender = store.RoleAssistant, store.SenderAva
		}
		if _, err := h.Store.AppendMessage(ctx, sm); err != nil {
			return err
		}
	}
	return nil
}

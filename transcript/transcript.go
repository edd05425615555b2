// Package transcript stores conversations: it turns llm messages into
// store messages and back, for the orchestrator's sessions and for
// subagents' own conversations alike.
package transcript

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
)

// ToStore converts msgs for session; sender names the assistant
// (store.SenderAva, or a subagent's ID).
//
// An image block kept elsewhere (its Ref, an attachment's ID) is stored
// by reference: its media type and Ref without its bytes, so that a
// history row does not carry megabytes; whoever loads the conversation
// for a model reads the bytes again (orchestrator.ImageSource). An image
// with no Ref is stored whole.
func ToStore(session, sender string, msgs []llm.Message) ([]store.Message, error) {
	out := make([]store.Message, 0, len(msgs))
	for _, m := range msgs {
		blocks, err := json.Marshal(byReference(m))
		if err != nil {
			return nil, fmt.Errorf("encode message: %w", err)
		}
		sm := store.Message{SessionKey: session, Role: store.RoleUser, Sender: store.SenderUser, Text: m.TextContent(), Blocks: blocks}
		if m.Role == llm.RoleAssistant {
			sm.Role, sm.Sender = store.RoleAssistant, sender
		}
		out = append(out, sm)
	}
	return out, nil
}

// byReference is m with the bytes of its referenced images left out.
func byReference(m llm.Message) llm.Message {
	for i, b := range m.Content {
		if b.Type != llm.BlockImage || b.Ref == "" || b.ImageData == nil {
			continue
		}
		m.Content = slices.Clone(m.Content)
		for j := i; j < len(m.Content); j++ {
			if m.Content[j].Type == llm.BlockImage && m.Content[j].Ref != "" {
				m.Content[j].ImageData = nil
			}
		}
		return m
	}
	return m
}

// FromStore reads a conversation back. Consecutive messages of one role
// are merged, as providers want roles to alternate, with tool results
// first: a [Subagent] message stored between a turn's tool call and its
// results must not come between them.
func FromStore(stored []store.Message) ([]llm.Message, error) {
	var out []llm.Message
	for _, sm := range stored {
		m, err := decode(sm)
		if err != nil {
			return nil, fmt.Errorf("message %d of %s: %w", sm.ID, sm.SessionKey, err)
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = resultsFirst(append(out[n-1].Content, m.Content...))
			continue
		}
		out = append(out, m)
	}
	return out, nil
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

// resultsFirst orders tool results before other blocks (stable).
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

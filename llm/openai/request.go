package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/avaagent/ava/llm"
)

// errorPrefix marks a failed tool result's content on the wire, which has
// no is_error field.
const errorPrefix = "ERROR: "

// checkRequest checks what every request needs.
func checkRequest(req *llm.Request) error {
	if req == nil {
		return fmt.Errorf("request is nil")
	}
	if req.Model == "" {
		return errNoModel
	}
	if req.MaxTokens < 0 {
		return fmt.Errorf("MaxTokens is negative (%d)", req.MaxTokens)
	}
	return nil
}

// maxTokensFor is the request's output cap, else the provider's; zero
// sends none.
func (p *Provider) maxTokensFor(req *llm.Request) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return p.maxTokens
}

// mapMessages maps each message by its role, with user for the user's
// and assistant for the assistant's; an error names the message.
func mapMessages[S ~[]E, E any](msgs []llm.Message, user, assistant func(llm.Message) (S, error)) (S, error) {
	var out S
	for i, m := range msgs {
		var (
			items S
			err   error
		)
		switch m.Role {
		case llm.RoleUser:
			items, err = user(m)
		case llm.RoleAssistant:
			items, err = assistant(m)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, items...)
	}
	return out, nil
}

// userParts maps a user message's tool results (result, first, in order;
// an error's content marked as one) and then its text and images, if any
// (text, which gets the images in order); any other block is refused.
func userParts[S ~[]E, E any](m llm.Message, result func(id, content string) E, text func(string, []llm.Block) E) (S, error) {
	var (
		out    S
		all    string
		has    bool
		images []llm.Block
	)
	for j, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			all += b.Text
			has = true
		case llm.BlockImage:
			if len(b.ImageData) == 0 {
				return nil, fmt.Errorf("block %d: image %s (%s) has no data", j, b.Ref, b.MediaType)
			}
			images = append(images, b)
		case llm.BlockToolResult:
			if b.ToolCallID == "" {
				return nil, fmt.Errorf("block %d: tool result has no tool_call_id", j)
			}
			content := b.Content
			if b.IsError {
				content = errorPrefix + content
			}
			out = append(out, result(b.ToolCallID, content))
		default:
			return nil, fmt.Errorf("block %d: %q block not allowed in a user message", j, b.Type)
		}
	}
	if has || len(images) > 0 {
		out = append(out, text(all, images))
	}
	return out, nil
}

// dataURL is an image block as a data URL, the way both OpenAI APIs take
// an image inline.
func dataURL(b llm.Block) string {
	return "data:" + b.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b.ImageData)
}

// toolSchema is a tool's JSON Schema as it is (an empty object schema
// when it has none); one that is not a JSON object is refused.
func toolSchema(d llm.ToolDef) (json.RawMessage, error) {
	if d.Name == "" {
		return nil, fmt.Errorf("tool definition has no name")
	}
	t := bytes.TrimSpace(d.Schema)
	if len(t) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, fmt.Errorf("tool %s: schema is not a JSON object", d.Name)
	}
	return t, nil
}

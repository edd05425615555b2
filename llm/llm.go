// Package llm is Ava's provider-neutral view of a chat model: messages made
// of typed blocks (text, tool calls, tool results, thinking), tool
// definitions with JSON Schema, streaming deltas and token usage.
//
// A Provider streams one model turn. Backends live in subpackages
// (llm/anthropic, llm/openai, llm/scripted); this package holds the shared
// types, model-name resolution, the price table and the retry policy that
// wraps every backend.
package llm

import (
	"context"
	"encoding/json"
)

// Role is who wrote a message.
type Role string

// Message roles. Tool results travel in user messages, as in the Anthropic
// API; the OpenAI backend splits them into "tool" messages on the wire.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType says which fields of a Block are set.
type BlockType string

// Block types.
const (
	BlockText             BlockType = "text"
	BlockToolCall         BlockType = "tool_call"
	BlockToolResult       BlockType = "tool_result"
	BlockThinking         BlockType = "thinking"
	BlockRedactedThinking BlockType = "redacted_thinking"
)

// Block is one piece of a message.
type Block struct {
	Type BlockType `json:"type"`

	// Text is the text of a text block, or the thinking of a thinking block.
	Text string `json:"text,omitempty"`
	// Signature is the provider's signature of a thinking block; it must be
	// sent back unchanged on the next turn.
	Signature string `json:"signature,omitempty"`
	// Data is the opaque payload of a redacted thinking block.
	Data string `json:"data,omitempty"`

	// ToolCallID links a tool call to its result.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the called tool (tool_call blocks).
	ToolName string `json:"tool_name,omitempty"`
	// Input is the call's arguments as the model sent them. It may be
	// invalid JSON: the agent loop reports that back to the model, and the
	// block's JSON encoding keeps such arguments as a string (input_raw).
	Input json.RawMessage `json:"input,omitempty"`

	// Content is a tool result's output (tool_result blocks).
	Content string `json:"content,omitempty"`
	// IsError marks a failed tool result.
	IsError bool `json:"is_error,omitempty"`
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// ToolResult returns a tool result block.
func ToolResult(callID, content string, isError bool) Block {
	return Block{Type: BlockToolResult, ToolCallID: callID, Content: content, IsError: isError}
}

// Message is one turn of a conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// UserText returns a user message holding one text block.
func UserText(s string) Message { return Message{Role: RoleUser, Content: []Block{Text(s)}} }

// TextContent joins the message's text blocks.
func (m Message) TextContent() string {
	var out string
	for _, b := range m.Content {
		if b.Type == BlockText {
			out += b.Text
		}
	}
	return out
}

// ToolCalls returns the message's tool call blocks in order.
func (m Message) ToolCalls() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockToolCall {
			out = append(out, b)
		}
	}
	return out
}

// ToolDef describes a tool to the model.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Schema is the JSON Schema of the tool's arguments (an object schema).
	Schema json.RawMessage `json:"input_schema"`
}

// Request is one call to a model.
type Request struct {
	// Model is the provider's own model ID (no "provider/" prefix).
	Model    string
	System   string
	Messages []Message
	Tools    []ToolDef
	// MaxTokens caps the response's output tokens. Zero lets the backend
	// choose its default.
	MaxTokens int
	// ThinkingBudget enables extended thinking with this many tokens when
	// the backend supports it; zero disables it.
	ThinkingBudget int
}

// Usage counts the tokens of one response.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Total is every token the response was billed for.
func (u Usage) Total() int {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

// StopReason says why the model stopped.
type StopReason string

// Stop reasons, normalised across providers.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopOther     StopReason = "other"
)

// Response is a complete model turn.
type Response struct {
	// Message is the assistant message, blocks in the order received.
	Message    Message
	Usage      Usage
	StopReason StopReason
	// Model is the model that answered, as the provider reported it.
	Model string
}

// DeltaType says what a Delta carries.
type DeltaType string

// Delta types.
const (
	// DeltaText is a piece of the answer's text.
	DeltaText DeltaType = "text"
	// DeltaThinking is a piece of extended thinking.
	DeltaThinking DeltaType = "thinking"
	// DeltaToolCall says the model started a tool call (ToolName is set).
	DeltaToolCall DeltaType = "tool_call"
	// DeltaReset says the stream failed and is being retried: everything
	// received for this turn so far is void. Err and Attempt say why.
	DeltaReset DeltaType = "reset"
)

// Delta is an incremental piece of a streaming response, for live display.
// The complete turn is the Response returned by Stream; deltas are a view.
type Delta struct {
	Type     DeltaType
	Text     string
	ToolName string
	// Attempt is the retry attempt about to start (DeltaReset).
	Attempt int
	// Err is the failure being retried (DeltaReset).
	Err error
}

// Provider streams model turns. Implementations must be safe for concurrent
// use and must abort the HTTP stream as soon as ctx is done.
type Provider interface {
	// Name is the provider's name as used in model names ("anthropic").
	Name() string
	// Stream sends req, calls onDelta (if non-nil) for each incremental
	// piece in order from the calling goroutine, and returns the complete
	// turn.
	Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

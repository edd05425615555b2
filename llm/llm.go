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
	"net/url"
	"strconv"
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
	// BlockServerToolUse is a call of one of the provider's own tools
	// (its web search or web fetch), which the provider ran itself.
	BlockServerToolUse BlockType = "server_tool_use"
	// BlockServerToolResult is what the provider's own tool returned.
	BlockServerToolResult BlockType = "server_tool_result"
	// BlockImage is an image in a user message: its media type, its
	// bytes and, for a file a person attached, the attachment it is
	// (Ref), which is all the stored history keeps of it (package
	// transcript).
	BlockImage BlockType = "image"
)

// ImageTypes are the media types an image block may have: the ones
// every backend's provider takes.
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

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

	// Raw is a server tool block (server_tool_use, server_tool_result)
	// exactly as the provider sent it: the provider requires it back
	// unchanged on the next turn, and no other text of the search results
	// ever reaches a prompt. ToolCallID, ToolName and Input (of a call)
	// and Citations (of a result: the pages found) are read from it for
	// display and the audit log only.
	Raw json.RawMessage `json:"raw,omitempty"`
	// Provider is the provider that wrote Raw ("anthropic"); another
	// provider's backend does not send the block.
	Provider string `json:"provider,omitempty"`
	// Citations are the sources a text block cites (each with its
	// provider's raw citation, sent back unchanged), or the pages a
	// server tool result found (URL and title).
	Citations []Citation `json:"citations,omitempty"`

	// MediaType is an image block's media type (one of ImageTypes).
	MediaType string `json:"media_type,omitempty"`
	// ImageData is an image block's bytes (base64 in JSON).
	ImageData []byte `json:"image_data,omitempty"`
	// Ref names where an image block's bytes are kept (an attachment's
	// ID), so that a stored conversation need not hold them.
	Ref string `json:"ref,omitempty"`
}

// Citation is a source the model cited: a web page and the text of it
// the claim rests on.
type Citation struct {
	URL       string `json:"url"`
	Title     string `json:"title,omitempty"`
	CitedText string `json:"cited_text,omitempty"`
	// Raw is the provider's own citation object, sent back unchanged on
	// the next turn (empty for a server tool result's page).
	Raw json.RawMessage `json:"raw,omitempty"`
}

// MaxCitedText is how many characters of a citation's cited text Ava
// keeps for what it shows and stores (the result, the [Subagent]
// message, the panel): a provider may quote a whole page. A citation
// sent back to its provider goes in its Raw, whole.
const MaxCitedText = 300

// MaxCitationsPerBlock bounds the citations read from one text block of a
// provider that does not need them back (OpenAI's annotations, which go
// back inside their message item; OpenRouter's, which do not go back).
const MaxCitationsPerBlock = 64

// CutCitedText returns s cut to MaxCitedText characters, an ellipsis
// marking the cut.
func CutCitedText(s string) string {
	n := 0
	for i := range s {
		if n == MaxCitedText {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// ToolResult returns a tool result block.
func ToolResult(callID, content string, isError bool) Block {
	return Block{Type: BlockToolResult, ToolCallID: callID, Content: content, IsError: isError}
}

// Image returns an image block of data, of mediaType, kept as ref ("" if
// it is kept nowhere else).
func Image(mediaType string, data []byte, ref string) Block {
	return Block{Type: BlockImage, MediaType: mediaType, ImageData: data, Ref: ref}
}

// Images returns the message's image blocks in order.
func (m Message) Images() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockImage {
			out = append(out, b)
		}
	}
	return out
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

// Citations returns the citations of the message's text blocks, the
// first of each URL in order, without their raw provider objects.
func (m Message) Citations() []Citation {
	var out []Citation
	seen := map[string]bool{}
	for _, b := range m.Content {
		if b.Type != BlockText {
			continue
		}
		for _, c := range b.Citations {
			if c.URL == "" || seen[c.URL] {
				continue
			}
			seen[c.URL] = true
			c.Raw = nil
			out = append(out, c)
		}
	}
	return out
}

// ServerTools asks the provider to offer the model its own tools, which
// it runs on its side: its web search and, where it has one, its web
// fetch. The provider fetches the pages, not Ava.
type ServerTools struct {
	// WebSearch offers the provider's web search; WebFetch its web fetch.
	WebSearch bool `json:"web_search,omitempty"`
	WebFetch  bool `json:"web_fetch,omitempty"`
	// MaxUses caps the uses of each tool in one model call (0: the
	// provider's default, no cap). On OpenAI it is the response's
	// max_tool_calls (every built-in tool call counts).
	MaxUses int `json:"max_uses,omitempty"`
	// AllowedDomains, when set, are the only domains results may come
	// from; BlockedDomains never appear. The provider takes one or the
	// other: with both, AllowedDomains wins.
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	BlockedDomains []string `json:"blocked_domains,omitempty"`
}

// HasServerSearch reports whether the named provider's backend can run
// a web search on the provider's side (ServerTools): Anthropic's web
// search, OpenAI's (through the Responses API, on OpenAI's own API only:
// the caller knows whether "openai" is OpenAI's endpoint or a compatible
// server) and OpenRouter's web plugin.
func HasServerSearch(provider string) bool {
	switch provider {
	case "anthropic", "openai", "openrouter":
		return true
	}
	return false
}

// HasServerFetch reports whether the named provider's backend can also
// fetch pages on its side (ServerTools.WebFetch): Anthropic only.
func HasServerFetch(provider string) bool { return provider == "anthropic" }

// ServerSearchDomains says which of ServerTools' domain lists the named
// provider's search applies: Anthropic both, OpenAI the allowed domains
// only, OpenRouter's web plugin neither.
func ServerSearchDomains(provider string) (allowed, blocked bool) {
	switch provider {
	case "anthropic":
		return true, true
	case "openai":
		return true, false
	}
	return false, false
}

// ServerSearchesPerCall is the most searches the named provider runs on
// its side in one model call, under a cap of maxUses: OpenRouter's web
// plugin runs one per request that carries it; the others honour the cap.
func ServerSearchesPerCall(provider string, maxUses int) int {
	if provider == "openrouter" {
		return 1
	}
	return maxUses
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
	// ServerTools, when set, offers the provider's own tools besides
	// Tools; a backend without them ignores it.
	ServerTools *ServerTools
}

// Usage counts the tokens of one response.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// WebSearches and WebFetches count the provider's server-side
	// searches and fetches, as its usage reports them; searches are
	// billed per use (Price.PerSearch).
	WebSearches int `json:"web_searches,omitempty"`
	WebFetches  int `json:"web_fetches,omitempty"`
}

// AllInputTokens is every input token of the response: uncached ones,
// cache reads and cache writes (InputTokens counts the uncached ones
// only). OpenTelemetry's gen_ai.usage.input_tokens is this figure.
func (u Usage) AllInputTokens() int {
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
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
		WebSearches:      u.WebSearches + v.WebSearches,
		WebFetches:       u.WebFetches + v.WebFetches,
	}
}

// StopReason says why the model stopped.
type StopReason string

// Stop reasons, normalised across providers.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	// StopPause is a turn the provider paused in a long run of its own
	// tools: the caller sends the conversation back, the paused turn
	// last, and the model goes on.
	StopPause StopReason = "pause_turn"
	StopOther StopReason = "other"
)

// Response is a complete model turn.
type Response struct {
	// Message is the assistant message, blocks in the order received.
	Message    Message
	Usage      Usage
	StopReason StopReason
	// RawStopReason is the provider's own reason, as it sent it, before
	// StopReason normalised it: Anthropic's stop_reason ("end_turn",
	// "tool_use", "stop_sequence", …), a chat completion's finish_reason
	// ("stop", "tool_calls", "length", …), the Responses API's status or
	// incomplete reason. Empty when the provider sent none (then
	// StopReason is all there is). Telemetry records it.
	RawStopReason string
	// ID is the provider's ID of the response (msg_…, chatcmpl-…,
	// resp_…); empty when it sent none.
	ID string
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
	// DeltaServerTool says the provider is running one of its own tools
	// (ToolName, with its arguments in Input: the search's query).
	DeltaServerTool DeltaType = "server_tool"
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
	// Input is a server tool's arguments (DeltaServerTool).
	Input json.RawMessage
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

// Endpoint is implemented by a Provider that calls a model server over
// the network: BaseURL is the API root it sends requests to, as
// configured (a proxy's, a local server's, or the provider's public
// one). Telemetry names the server from it (server.address,
// server.port).
type Endpoint interface {
	BaseURL() *url.URL
}

// Wrapper is implemented by a Provider that wraps another (the retry
// policy, a rate limiter): Unwrap returns the wrapped one, so that
// what only the innermost provider knows (its Endpoint) can be found.
type Wrapper interface {
	Unwrap() Provider
}

// ServerOf returns the host and port of the server p calls, looking
// through wrappers (Wrapper): the port is the base URL's, or the
// scheme's default (443 for https, 80 for http). It returns "", 0 for
// a provider that calls no server (the offline scripted model).
func ServerOf(p Provider) (host string, port int) {
	for p != nil {
		if e, ok := p.(Endpoint); ok {
			return hostPort(e.BaseURL())
		}
		w, ok := p.(Wrapper)
		if !ok {
			break
		}
		p = w.Unwrap()
	}
	return "", 0
}

// hostPort splits u's host, defaulting the port by the scheme.
func hostPort(u *url.URL) (string, int) {
	if u == nil || u.Hostname() == "" {
		return "", 0
	}
	if n, err := strconv.Atoi(u.Port()); err == nil {
		return u.Hostname(), n
	}
	switch u.Scheme {
	case "https":
		return u.Hostname(), 443
	case "http":
		return u.Hostname(), 80
	}
	return u.Hostname(), 0
}

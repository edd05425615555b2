package openai

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/avaagent/ava/internal/jsonstr"
	"github.com/avaagent/ava/llm"
)

// The chat completions request body is written here directly, appending
// to a []byte, and handed to the SDK as it is (chatBody): building the
// SDK's ChatCompletionNewParams and encoding it by reflection cost about
// 0.7 ms for a process's first request (the SDK builds its encoders
// then) and 0.2 ms for every later one. The bytes are those the SDK
// would send for the same request, field for field and escape for
// escape: TestChatBodyMatchesSDK encodes requests both ways.

// chatBody is the streaming chat completions request for req, as JSON.
func (p *Provider) chatBody(req *llm.Request) ([]byte, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	w := chatWriter{b: make([]byte, 0, bodySize(req))}
	w.b = append(w.b, '{')
	if req.System != "" {
		w.message("system", req.System)
	}
	if _, err := mapMessages(req.Messages, w.user, w.assistant); err != nil {
		return nil, err
	}
	if w.n > 0 { // no messages, no field, as the SDK does
		w.b = append(w.b, `],`...)
	}
	w.b = append(w.b, `"model":`...)
	w.b = jsonstr.Append(w.b, req.Model, false)
	if maxTokens := p.maxTokensFor(req); maxTokens > 0 {
		field := `,"max_tokens":`
		if p.maxCompletionTokens {
			field = `,"max_completion_tokens":`
		}
		w.b = strconv.AppendInt(append(w.b, field...), int64(maxTokens), 10)
	}
	w.b = append(w.b, `,"stream_options":{"include_usage":true}`...)
	if err := w.tools(req.Tools); err != nil {
		return nil, err
	}
	if p.webPlugin(req) {
		w.b = append(w.b, `,"plugins":[{"engine":"exa","id":"web","max_results":`...)
		w.b = strconv.AppendInt(w.b, WebPluginResults, 10)
		w.b = append(w.b, `}]`...)
	}
	return append(w.b, `,"stream":true}`...), nil
}

// bodySize estimates the bytes of req's body, so that it is allocated
// once: its strings, an eighth more for escapes, and the JSON around
// them.
func bodySize(req *llm.Request) int {
	n := len(req.System) + 256
	for _, m := range req.Messages {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Content) + len(b.Input) + len(b.ToolCallID) + len(b.ToolName) + len(b.ImageData)*4/3 + 96
		}
	}
	for _, d := range req.Tools {
		n += len(d.Name) + len(d.Description) + len(d.Schema) + 64
	}
	return n + n/8
}

// written is what the writer's message mappers return: the messages are
// in the buffer already (mapMessages and userParts only sequence them).
type written struct{}

// chatWriter appends a request's messages and tools to b.
type chatWriter struct {
	b []byte
	// n counts the messages written, for the commas between them.
	n int
}

// open starts a message object: the messages field before the first,
// a comma before the others.
func (w *chatWriter) open() {
	if w.n == 0 {
		w.b = append(w.b, `"messages":[`...)
	} else {
		w.b = append(w.b, ',')
	}
	w.n++
	w.b = append(w.b, '{')
}

// message writes a message of role with text content.
func (w *chatWriter) message(role, content string) {
	w.open()
	w.b = append(w.b, `"content":`...)
	w.b = jsonstr.Append(w.b, content, false)
	w.b = append(w.b, `,"role":"`...)
	w.b = append(w.b, role...)
	w.b = append(w.b, `"}`...)
}

// user writes a user message: a "tool" message per tool result, first,
// and a user message holding its text, if any (userParts).
func (w *chatWriter) user(m llm.Message) ([]written, error) {
	return userParts[[]written](m,
		func(id, content string) written {
			w.open()
			w.b = append(w.b, `"content":`...)
			w.b = jsonstr.Append(w.b, content, false)
			w.b = append(w.b, `,"tool_call_id":`...)
			w.b = jsonstr.Append(w.b, id, false)
			w.b = append(w.b, `,"role":"tool"}`...)
			return written{}
		},
		func(text string, images []llm.Block) written {
			if len(images) == 0 {
				w.message("user", text)
				return written{}
			}
			w.userParts(text, images)
			return written{}
		})
}

// userParts writes a user message whose content is parts: its text,
// if any, then each image as an image_url part holding a data URL
// (fields in the order the SDK writes them).
func (w *chatWriter) userParts(text string, images []llm.Block) {
	w.open()
	w.b = append(w.b, `"content":[`...)
	if text != "" {
		w.b = append(w.b, `{"text":`...)
		w.b = jsonstr.Append(w.b, text, false)
		w.b = append(w.b, `,"type":"text"},`...)
	}
	for i, img := range images {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, `{"image_url":{"url":`...)
		w.b = jsonstr.Append(w.b, dataURL(img), false)
		w.b = append(w.b, `},"type":"image_url"}`...)
	}
	w.b = append(w.b, `],"role":"user"}`...)
}

// assistant writes an assistant message's text and tool calls; thinking
// is dropped. A message left with neither is not sent.
func (w *chatWriter) assistant(m llm.Message) ([]written, error) {
	var (
		text  string
		has   bool
		calls int
	)
	for j, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			text += b.Text
			has = has || b.Text != ""
		case llm.BlockThinking, llm.BlockRedactedThinking, llm.BlockServerToolUse, llm.BlockServerToolResult:
			// No field for it on this wire (a server tool's blocks are
			// another provider's; its citations stay in the text).
		case llm.BlockToolCall:
			if b.ToolCallID == "" || b.ToolName == "" {
				return nil, fmt.Errorf("block %d: tool call needs both an ID and a tool name", j)
			}
			calls++
		default:
			return nil, fmt.Errorf("block %d: %q block not allowed in an assistant message", j, b.Type)
		}
	}
	if !has && calls == 0 {
		return nil, nil
	}
	w.open()
	if has {
		w.b = append(w.b, `"content":`...)
		w.b = jsonstr.Append(w.b, text, false)
		if calls > 0 {
			w.b = append(w.b, ',')
		}
	}
	if calls > 0 {
		w.toolCalls(m.Content)
	}
	w.b = append(w.b, `,"role":"assistant"}`...)
	return nil, nil
}

// toolCalls writes the tool_calls field of an assistant message whose
// calls were checked; a call without input sends "{}".
func (w *chatWriter) toolCalls(blocks []llm.Block) {
	w.b = append(w.b, `"tool_calls":[`...)
	first := true
	for _, b := range blocks {
		if b.Type != llm.BlockToolCall {
			continue
		}
		if !first {
			w.b = append(w.b, ',')
		}
		first = false
		args := string(b.Input)
		if args == "" {
			args = "{}"
		}
		w.b = append(w.b, `{"id":`...)
		w.b = jsonstr.Append(w.b, b.ToolCallID, false)
		w.b = append(w.b, `,"function":{"arguments":`...)
		w.b = jsonstr.Append(w.b, args, false)
		w.b = append(w.b, `,"name":`...)
		w.b = jsonstr.Append(w.b, b.ToolName, false)
		w.b = append(w.b, `},"type":"function"}`...)
	}
	w.b = append(w.b, ']')
}

// tools writes the tools field, omitted when there are none (OpenAI
// rejects "tools": []).
func (w *chatWriter) tools(defs []llm.ToolDef) error {
	if len(defs) == 0 {
		return nil
	}
	w.b = append(w.b, `,"tools":[`...)
	for i, d := range defs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, `{"function":`...)
		var err error
		if w.b, err = appendFunction(w.b, d); err != nil {
			return err
		}
		w.b = append(w.b, `,"type":"function"}`...)
	}
	w.b = append(w.b, ']')
	return nil
}

// appendFunction appends a function definition as OpenAI takes it, the
// tool's schema copied in as it is (compacted, and with <, > and &
// escaped as encoding/json writes a json.RawMessage).
func appendFunction(b []byte, d llm.ToolDef) ([]byte, error) {
	compact, err := wireSchema(d)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"name":`...)
	b = jsonstr.Append(b, d.Name, true)
	if d.Description != "" {
		b = append(b, `,"description":`...)
		b = jsonstr.Append(b, d.Description, true)
	}
	b = append(b, `,"parameters":`...)
	b = append(b, compact...)
	return append(b, '}'), nil
}

// maxSchemas bounds schemaCache; a full cache is emptied.
const maxSchemas = 512

// schemaCache maps a tool's schema as given to its checked, compacted
// form. A process offers the same few schemas in every request, and
// checking and compacting them took most of a body's time.
var schemaCache = struct {
	sync.RWMutex
	m map[string][]byte
}{m: map[string][]byte{}}

// wireSchema is d's schema as a body carries it (toolSchema's checks,
// then compacted as encoding/json writes a json.RawMessage), from
// schemaCache when it was seen before.
func wireSchema(d llm.ToolDef) ([]byte, error) {
	schemaCache.RLock()
	compact, ok := schemaCache.m[string(d.Schema)]
	schemaCache.RUnlock()
	if ok && d.Name != "" {
		return compact, nil
	}
	schema, err := toolSchema(d)
	if err != nil {
		return nil, err
	}
	if compact, err = json.Marshal(schema); err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", d.Name, err)
	}
	schemaCache.Lock()
	if len(schemaCache.m) >= maxSchemas {
		clear(schemaCache.m)
	}
	schemaCache.m[string(d.Schema)] = compact
	schemaCache.Unlock()
	return compact, nil
}

package openai

// The SDK's request building, which Stream used before the body was
// written directly (chatjson.go): kept in tests only, as the oracle the
// direct writer is compared with.

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/avaagent/ava/llm"
)

// params maps req to the SDK's request parameters.
func (p *Provider) params(req *llm.Request) (openai.ChatCompletionNewParams, error) {
	var params openai.ChatCompletionNewParams
	if err := checkRequest(req); err != nil {
		return params, err
	}
	msgs, err := messages(req)
	if err != nil {
		return params, err
	}
	tools, err := toolDefs(req.Tools)
	if err != nil {
		return params, err
	}
	params.Model = shared.ChatModel(req.Model)
	params.Messages = msgs
	params.Tools = tools
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	if maxTokens := p.maxTokensFor(req); maxTokens > 0 {
		if p.maxCompletionTokens {
			params.MaxCompletionTokens = openai.Int(int64(maxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(maxTokens))
		}
	}
	if p.webPlugin(req) {
		params.SetExtraFields(map[string]any{"plugins": []any{webPluginParams()}})
	}
	return params, nil
}

// messages maps the system prompt and the conversation to chat messages.
func messages(req *llm.Request) ([]openai.ChatCompletionMessageParamUnion, error) {
	var out []openai.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, openai.SystemMessage(req.System))
	}
	msgs, err := mapMessages(req.Messages, userMessages, assistantMessage)
	if err != nil {
		return nil, err
	}
	return append(out, msgs...), nil
}

// userMessages maps a user message to its tool messages (one per tool
// result, first) and a user message holding its text, if any.
func userMessages(m llm.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	return userParts[[]openai.ChatCompletionMessageParamUnion](m,
		func(id, content string) openai.ChatCompletionMessageParamUnion {
			return openai.ToolMessage(content, id)
		},
		func(text string, images []llm.Block) openai.ChatCompletionMessageParamUnion {
			if len(images) == 0 {
				return openai.UserMessage(text)
			}
			var parts []openai.ChatCompletionContentPartUnionParam
			if text != "" {
				parts = append(parts, openai.TextContentPart(text))
			}
			for _, img := range images {
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(img)}))
			}
			return openai.UserMessage(parts)
		})
}

// assistantMessage maps an assistant message's text and tool calls;
// thinking is dropped. A message left with neither is not sent.
func assistantMessage(m llm.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	var (
		asst openai.ChatCompletionAssistantMessageParam
		text string
		has  bool
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
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			asst.ToolCalls = append(asst.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       b.ToolCallID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.ToolName, Arguments: args},
				},
			})
		default:
			return nil, fmt.Errorf("block %d: %q block not allowed in an assistant message", j, b.Type)
		}
	}
	if !has && len(asst.ToolCalls) == 0 {
		return nil, nil
	}
	if has {
		asst.Content.OfString = openai.String(text)
	}
	return []openai.ChatCompletionMessageParamUnion{{OfAssistant: &asst}}, nil
}

// toolDefs maps tool definitions to function tools whose parameters are
// the tool's JSON Schema.
func toolDefs(defs []llm.ToolDef) ([]openai.ChatCompletionToolUnionParam, error) {
	// nil, not empty: OpenAI rejects "tools": [].
	var out []openai.ChatCompletionToolUnionParam
	for _, d := range defs {
		raw, err := functionJSON(d)
		if err != nil {
			return nil, err
		}
		out = append(out, openai.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](raw)))
	}
	return out, nil
}

// functionJSON is a function definition as OpenAI takes it, the tool's
// schema copied in as it is: the SDK would otherwise decode it into a map
// and encode that again by reflection for every request (about half a
// millisecond a request for Ava's tools).
func functionJSON(d llm.ToolDef) (json.RawMessage, error) {
	schema, err := toolSchema(d)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{d.Name, d.Description, schema})
}

// webPluginParams is the plugin as the request carries it.
func webPluginParams() map[string]any {
	return map[string]any{"id": "web", "engine": "exa", "max_results": WebPluginResults}
}

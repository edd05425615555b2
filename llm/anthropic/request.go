package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/avaagent/ava/llm"
)

// MinThinkingBudget is the smallest extended-thinking budget the API
// accepts.
const MinThinkingBudget = 1024

// params maps req to the SDK's request, with prompt-cache breakpoints
// (see cache.go).
func (p *Provider) params(req *llm.Request) (anthropic.MessageNewParams, error) {
	var params anthropic.MessageNewParams
	if req == nil {
		return params, errors.New("request is nil")
	}
	if req.Model == "" {
		return params, errors.New("request has no model")
	}
	if len(req.Messages) == 0 {
		return params, errors.New("request has no messages")
	}
	if req.MaxTokens < 0 || req.ThinkingBudget < 0 {
		return params, fmt.Errorf("request has negative MaxTokens (%d) or ThinkingBudget (%d)", req.MaxTokens, req.ThinkingBudget)
	}
	messages, err := messageParams(req.Messages)
	if err != nil {
		return params, err
	}
	tools, err := toolParams(req.Tools)
	if err != nil {
		return params, err
	}
	params = anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(p.maxTokensFor(req)),
		Messages:  messages,
		// Server tools first, so the cache breakpoint on the last tool
		// covers them too.
		Tools: append(serverToolParams(req.ServerTools), tools...),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{
			Text:         req.System,
			CacheControl: anthropic.NewCacheControlEphemeralParam(),
		}}
	}
	if req.ThinkingBudget > 0 {
		if req.ThinkingBudget < MinThinkingBudget {
			return params, fmt.Errorf("thinking budget %d is below the API minimum of %d tokens", req.ThinkingBudget, MinThinkingBudget)
		}
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(req.ThinkingBudget))
	}
	return params, nil
}

// maxTokensFor is the request's output cap. With extended thinking the
// cap includes the thinking budget, which must be below it: a cap at or
// under the budget is raised by the budget.
func (p *Provider) maxTokensFor(req *llm.Request) int {
	n := req.MaxTokens
	if n == 0 {
		n = p.maxTokens
	}
	if req.ThinkingBudget > 0 && n <= req.ThinkingBudget {
		n += req.ThinkingBudget
	}
	return n
}

// messageParams maps the conversation and marks its tail with
// prompt-cache breakpoints (markTail).
func messageParams(msgs []llm.Message) ([]anthropic.MessageParam, error) {
	out := make([]anthropic.MessageParam, 0, len(msgs))
	for i, m := range msgs {
		var role anthropic.MessageParamRole
		switch m.Role {
		case llm.RoleUser:
			role = anthropic.MessageParamRoleUser
		case llm.RoleAssistant:
			role = anthropic.MessageParamRoleAssistant
		default:
			return nil, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
		blocks := make([]anthropic.ContentBlockParamUnion, 0, len(m.Content))
		for j, b := range m.Content {
			cb, ok, err := blockParam(b)
			if err != nil {
				return nil, fmt.Errorf("message %d block %d: %w", i, j, err)
			}
			if ok {
				blocks = append(blocks, cb)
			}
		}
		if len(blocks) == 0 {
			return nil, fmt.Errorf("message %d (%s) has no content to send", i, m.Role)
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	markTail(out)
	return out, nil
}

// blockParam maps one block; ok is false for a block that is not sent: an
// empty text, which the API refuses, or a thinking block without a
// signature (from another provider), which it cannot verify.
func blockParam(b llm.Block) (cb anthropic.ContentBlockParamUnion, ok bool, err error) {
	switch b.Type {
	case llm.BlockText:
		if b.Text == "" {
			return cb, false, nil
		}
		// Another provider's text (OpenAI's, Provider "openai") keeps its
		// words but not its citations, which this API cannot read.
		if len(b.Citations) > 0 && (b.Provider == "" || b.Provider == providerName) {
			return textParam(b), true, nil
		}
		return anthropic.NewTextBlock(b.Text), true, nil
	case llm.BlockServerToolUse, llm.BlockServerToolResult:
		return serverBlockParam(b)
	case llm.BlockThinking:
		if b.Signature == "" {
			return cb, false, nil
		}
		return anthropic.NewThinkingBlock(b.Signature, b.Text), true, nil
	case llm.BlockRedactedThinking:
		if b.Data == "" {
			return cb, false, errors.New("redacted thinking block has no data")
		}
		return anthropic.NewRedactedThinkingBlock(b.Data), true, nil
	case llm.BlockToolCall:
		if b.ToolCallID == "" || b.ToolName == "" {
			return cb, false, fmt.Errorf("tool call needs an ID and a name (got ID %q, name %q)", b.ToolCallID, b.ToolName)
		}
		return anthropic.NewToolUseBlock(b.ToolCallID, toolInput(b.Input), b.ToolName), true, nil
	case llm.BlockImage:
		if len(b.ImageData) == 0 {
			return cb, false, fmt.Errorf("image %s (%s) has no data", b.Ref, b.MediaType)
		}
		return anthropic.NewImageBlockBase64(b.MediaType, base64.StdEncoding.EncodeToString(b.ImageData)), true, nil
	case llm.BlockToolResult:
		if b.ToolCallID == "" {
			return cb, false, errors.New("tool result has no tool call ID")
		}
		r := anthropic.ToolResultBlockParam{ToolUseID: b.ToolCallID}
		if b.Content != "" {
			r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: b.Content}}}
		}
		if b.IsError {
			r.IsError = param.NewOpt(true)
		}
		return anthropic.ContentBlockParamUnion{OfToolResult: &r}, true, nil
	}
	return cb, false, fmt.Errorf("unknown block type %q", b.Type)
}

// toolInput is a past tool call's input as the API takes it: a JSON
// object. Arguments the model sent as invalid JSON (already reported back
// to it in the tool result) are replaced by an empty object.
func toolInput(raw json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return json.RawMessage(`{}`)
	}
	return trimmed
}

// toolParams maps tool definitions, sending each schema verbatim, and
// marks the last tool as a prompt-cache breakpoint.
func toolParams(defs []llm.ToolDef) ([]anthropic.ToolUnionParam, error) {
	out := make([]anthropic.ToolUnionParam, 0, len(defs))
	for i, d := range defs {
		if d.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
		schema, err := inputSchema(d.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", d.Name, err)
		}
		t := anthropic.ToolParam{Name: d.Name, InputSchema: schema}
		if d.Description != "" {
			t.Description = param.NewOpt(d.Description)
		}
		if i == len(defs)-1 {
			t.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &t})
	}
	return out, nil
}

// inputSchema checks that raw is an object schema and wraps it so the SDK
// sends it unchanged. An empty schema takes no arguments.
func inputSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var probe struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return anthropic.ToolInputSchemaParam{}, fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	if probe.Type != nil && probe.Type != "object" {
		return anthropic.ToolInputSchemaParam{}, fmt.Errorf("input schema has type %v, want \"object\"", probe.Type)
	}
	return param.Override[anthropic.ToolInputSchemaParam](json.RawMessage(raw)), nil
}

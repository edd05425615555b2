package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
)

// The provider's own tools (Config.ServerTools) run on its side, within
// one model call: the loop neither runs them nor sees their output, only
// the blocks the provider returns, which stay in the conversation as they
// came (the provider requires them back unchanged) and are never wrapped
// as Ava's untrusted tool output, since Ava never reads them into a
// prompt. They are shown and recorded like Ava's own tools: activity
// while the provider runs one, then a ToolCall and a ToolResult event
// (the audit log's lines), whose output lists the pages found.

// serverActivity is the activity shown while the provider runs a tool:
// "🔍 searching 'podcast pricing'", "🌐 fetching https://…".
func serverActivity(name string, input json.RawMessage) string {
	var in struct {
		Query string `json:"query"`
		URL   string `json:"url"`
	}
	_ = json.Unmarshal(input, &in)
	switch {
	case in.Query != "":
		return fmt.Sprintf("🔍 searching '%s'", truncate(in.Query, 120))
	case in.URL != "":
		return "🌐 fetching " + truncate(in.URL, 200)
	}
	return "🔍 the provider is running " + name
}

// publishServerTools publishes each server tool the response used, with
// its result, as ToolCall and ToolResult events.
func (r *run) publishServerTools(msg llm.Message) {
	results := map[string]llm.Block{}
	for _, b := range msg.Content {
		if b.Type == llm.BlockServerToolResult {
			results[b.ToolCallID] = b
		}
	}
	for _, b := range msg.Content {
		if b.Type != llm.BlockServerToolUse {
			continue
		}
		args := b.Input
		if !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		at := r.a.now()
		r.a.update(func(s *Snapshot) { s.LastTool, s.LastToolAt = b.ToolName, at })
		r.a.emit(event.New(event.ToolCall, event.ToolCallContent{ID: b.ToolCallID, Name: b.ToolName, Args: args}))
		res, ok := results[b.ToolCallID]
		r.a.emit(event.New(event.ToolResult, event.ToolResultContent{ID: b.ToolCallID, Name: b.ToolName,
			Success: ok && !serverFailed(res), Output: serverOutput(res, ok)}))
	}
}

// serverFailed reports a server tool result that is an error: its
// content an object of a *_error type (Anthropic), or its status
// "failed" (OpenAI's web_search_call).
func serverFailed(b llm.Block) bool {
	var blk struct {
		Status  string `json:"status"`
		Content struct {
			Type      string `json:"type"`
			ErrorCode string `json:"error_code"`
		} `json:"content"`
	}
	_ = json.Unmarshal(b.Raw, &blk)
	return blk.Content.ErrorCode != "" || strings.HasSuffix(blk.Content.Type, "_error") || blk.Status == "failed"
}

// serverOutput is a server tool result as the event log shows it: by
// the provider, and the pages it found.
func serverOutput(b llm.Block, ok bool) string {
	if !ok {
		return "run by the provider; no result in this response"
	}
	if serverFailed(b) {
		return "run by the provider; it failed: " + truncate(string(b.Raw), 300)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "run by the provider (%s): %d pages", b.Provider, len(b.Citations))
	for _, c := range b.Citations {
		fmt.Fprintf(&out, "\n- %s %s", c.Title, c.URL)
	}
	return out.String()
}

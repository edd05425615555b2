package openai

import (
	"encoding/json"
	"fmt"

	"github.com/avaagent/ava/llm"
)

// OpenRouter's web search is a plugin on chat completions, not a tool the
// model calls: {"plugins":[{"id":"web","engine":"exa","max_results":5}]}
// makes OpenRouter search the web with the request's prompt before the
// model answers, and the answer's message carries url_citation
// annotations. Since it searches on every request that has it, Ava adds
// it only to a request whose last message is the person's (or the
// orchestrator's) text — the task, a follow-up — not to the loop's
// requests that send tool results back, so a subagent's run searches once
// per task. The engine is Exa, named so that the price is known: $4 per
// 1,000 results, five results a search (llm.OpenRouterSearchCents).

// WebPluginResults is how many results OpenRouter's web plugin asks for.
const WebPluginResults = 5

// webPlugin reports whether req carries OpenRouter's web plugin: the
// endpoint is OpenRouter's, the request offers the provider's search, and
// its last message is text from the user (not tool results).
func (p *Provider) webPlugin(req *llm.Request) bool {
	if p.search != SearchWebPlugin || req == nil || req.ServerTools == nil || !req.ServerTools.WebSearch || len(req.Messages) == 0 {
		return false
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != llm.RoleUser {
		return false
	}
	for _, b := range last.Content {
		if b.Type == llm.BlockToolResult {
			return false
		}
	}
	return last.TextContent() != ""
}

// chatCitation is an annotation of a chat completion message
// (OpenRouter's, and OpenAI's search models'): a url_citation with the
// page, the span of the answer it supports and, on OpenRouter, the
// page's text it rests on.
type chatCitation struct {
	Type        string      `json:"type"`
	URLCitation urlCitation `json:"url_citation"`
}

// annotations reads a delta's annotations from the raw JSON, since the
// SDK has no field for them.
func annotations(raw string) []json.RawMessage {
	if raw == "" || raw == "null" {
		return nil
	}
	var out []json.RawMessage
	if json.Unmarshal([]byte(raw), &out) != nil {
		return nil
	}
	return out
}

// pluginBlocks are the web plugin's search as Ava shows and records it: a
// server tool use (OpenRouter reports no query) and its result, the
// pages the answer cites. Another backend drops them, and chat
// completions has no field for them: they are never sent.
func pluginBlocks(provider string, cites []llm.Citation) []llm.Block {
	id := "websearch_" + newCallID()[len("call_"):]
	var pages []llm.Citation
	seen := map[string]bool{}
	for _, c := range cites {
		if !seen[c.URL] {
			seen[c.URL] = true
			pages = append(pages, llm.Citation{URL: c.URL, Title: c.Title})
		}
	}
	input := json.RawMessage(fmt.Sprintf(`{"plugin":"web","max_results":%d}`, WebPluginResults))
	return []llm.Block{
		{Type: llm.BlockServerToolUse, ToolCallID: id, ToolName: "web_search", Input: input, Provider: provider},
		{Type: llm.BlockServerToolResult, ToolCallID: id, ToolName: "web_search", Provider: provider, Citations: pages},
	}
}

// chatCitations maps url_citation annotations of text to citations: the
// cited text is the page's text when the annotation has it, else the
// span of the answer it points at. No Raw: chat completions has no field
// to send a citation back in.
func chatCitations(text string, anns []json.RawMessage) []llm.Citation {
	return citations(text, anns, func(raw json.RawMessage) (urlCitation, bool) {
		var a chatCitation
		ok := json.Unmarshal(raw, &a) == nil && a.Type == "url_citation"
		return a.URLCitation, ok
	})
}

package llmfake

import (
	"encoding/json"
	"fmt"
	"strings"
)

// This file plays a Turn's server-side searches and citations as
// Anthropic sends them: a server_tool_use block (its input streamed as
// input_json_delta), a web_search_tool_result block whole in its start
// event, citations on the text block (citations_delta when streamed) and
// usage.server_tool_use.

// searchID is the server_tool_use ID of the turn's i-th search.
func (m anthropicMessage) searchID(i int) string {
	return fmt.Sprintf("srvtoolu_fake_%s_%d", strings.TrimPrefix(m.ID, "msg_fake_"), i)
}

// searchResult is the web_search_tool_result block of the i-th search.
func (m anthropicMessage) searchResult(i int) map[string]any {
	results := []map[string]any{}
	for j, r := range m.Searches[i].Results {
		results = append(results, map[string]any{
			"type": "web_search_result", "url": r.URL, "title": r.Title,
			"encrypted_content": fmt.Sprintf("enc_fake_%d_%d", i, j), "page_age": "April 1, 2025",
		})
	}
	return map[string]any{"type": "web_search_tool_result", "tool_use_id": m.searchID(i), "content": results}
}

// citations are the text block's citations.
func (m anthropicMessage) citations() []map[string]any {
	out := []map[string]any{}
	for i, c := range m.Citations {
		out = append(out, map[string]any{
			"type": "web_search_result_location", "url": c.URL, "title": c.Title,
			"cited_text": c.CitedText, "encrypted_index": fmt.Sprintf("idx_fake_%d", i),
		})
	}
	return out
}

// serverUsage is usage.server_tool_use.
func (m anthropicMessage) serverUsage(searches int) map[string]any {
	return map[string]any{"web_search_requests": searches, "web_fetch_requests": 0}
}

// searchContent is the searches' blocks as the non-streaming API
// returns them.
func (m anthropicMessage) searchContent() []map[string]any {
	var out []map[string]any
	for i, s := range m.Searches {
		out = append(out,
			map[string]any{"type": "server_tool_use", "id": m.searchID(i), "name": "web_search", "input": map[string]any{"query": s.Query}},
			m.searchResult(i))
	}
	return out
}

// searchQuery is the i-th search's input as JSON text.
func (m anthropicMessage) searchQuery(i int) string {
	b, _ := json.Marshal(map[string]any{"query": m.Searches[i].Query})
	return string(b)
}

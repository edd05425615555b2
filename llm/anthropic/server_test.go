package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// searchTurn is a turn in which the provider searched and cited a page.
var searchTurn = llmfake.Turn{
	Searches: []llmfake.Search{{Query: "podcast transcription pricing", Results: []llmfake.Cite{
		{URL: "https://example.com/pricing", Title: "Pricing"}, {URL: "https://example.org/other", Title: "Other"}}}},
	Text:      "Transcription costs $0.006 a minute.",
	Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Pricing", CitedText: "$0.006 per minute"}},
	Usage:     llm.Usage{InputTokens: 100, OutputTokens: 20},
}

// TestServerSearchStreamed: the provider's web search is offered with
// max_uses and the domains, its blocks come back opaque with their
// citations, its search is counted, and the next turn sends every
// server block and citation back exactly as the API sent them.
func TestServerSearchStreamed(t *testing.T) {
	srv := llmfake.NewAnthropic(t, searchTurn, llmfake.Turn{Text: "ok"})
	p := newProvider(t, srv)
	req := userRequest("research pricing")
	req.ServerTools = &llm.ServerTools{WebSearch: true, WebFetch: true, MaxUses: 3, BlockedDomains: []string{"spam.example"}}
	var d deltas
	resp, err := p.Stream(context.Background(), req, d.add)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	tools, _ := srv.Requests()[0].Body["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools sent = %v, want web_search and web_fetch", tools)
	}
	ws := tools[0].(map[string]any)
	if ws["type"] != "web_search_20250305" || ws["name"] != "web_search" || ws["max_uses"] != 3.0 ||
		len(ws["blocked_domains"].([]any)) != 1 || ws["allowed_domains"] != nil {
		t.Errorf("web_search tool = %v", ws)
	}
	if wf := tools[1].(map[string]any); wf["type"] != "web_fetch_20250910" {
		t.Errorf("web_fetch tool = %v", wf)
	}
	if beta := srv.Requests()[0].Header.Get("Anthropic-Beta"); !strings.Contains(beta, "web-fetch-2025-09-10") {
		t.Errorf("anthropic-beta = %q, want web-fetch-2025-09-10", beta)
	}
	if resp.Usage.WebSearches != 1 {
		t.Errorf("WebSearches = %d, want 1", resp.Usage.WebSearches)
	}
	var sawSearch bool
	for _, x := range d.all() {
		if x.Type == llm.DeltaServerTool && x.ToolName == "web_search" && strings.Contains(string(x.Input), "podcast transcription pricing") {
			sawSearch = true
		}
	}
	if !sawSearch {
		t.Errorf("no server tool delta with the query in %+v", d.all())
	}
	blocks := resp.Message.Content
	if len(blocks) != 3 || blocks[0].Type != llm.BlockServerToolUse || blocks[1].Type != llm.BlockServerToolResult || blocks[2].Type != llm.BlockText {
		t.Fatalf("blocks = %+v", blocks)
	}
	if blocks[0].ToolName != "web_search" || !strings.Contains(string(blocks[0].Input), "podcast") {
		t.Errorf("server tool use = %+v", blocks[0])
	}
	if len(blocks[1].Citations) != 2 || blocks[1].Citations[0].URL != "https://example.com/pricing" {
		t.Errorf("result pages = %+v", blocks[1].Citations)
	}
	cits := resp.Message.Citations()
	if len(cits) != 1 || cits[0].URL != "https://example.com/pricing" || cits[0].CitedText != "$0.006 per minute" || cits[0].Title != "Pricing" {
		t.Errorf("citations = %+v", cits)
	}

	// The next turn, through the store's JSON, sends the blocks back.
	stored, err := json.Marshal(resp.Message)
	if err != nil {
		t.Fatal(err)
	}
	var back llm.Message
	if err := json.Unmarshal(stored, &back); err != nil {
		t.Fatal(err)
	}
	req2 := userRequest("research pricing")
	req2.Messages = append(req2.Messages, back, llm.UserText("thanks"))
	if _, err := p.Stream(context.Background(), req2, nil); err != nil {
		t.Fatalf("second Stream: %v", err)
	}
	sent := srv.Requests()[1].Body["messages"].([]any)[1].(map[string]any)["content"].([]any)
	if len(sent) != 3 {
		t.Fatalf("assistant content sent back = %v", sent)
	}
	use := sent[0].(map[string]any)
	if use["type"] != "server_tool_use" || use["id"] != "srvtoolu_fake_1_0" || use["input"].(map[string]any)["query"] != "podcast transcription pricing" {
		t.Errorf("server_tool_use sent back = %v", use)
	}
	result := sent[1].(map[string]any)
	pages := result["content"].([]any)
	if result["type"] != "web_search_tool_result" || result["tool_use_id"] != "srvtoolu_fake_1_0" || len(pages) != 2 ||
		pages[0].(map[string]any)["encrypted_content"] != "enc_fake_0_0" {
		t.Errorf("web_search_tool_result sent back = %v", result)
	}
	text := sent[2].(map[string]any)
	cs, _ := text["citations"].([]any)
	if len(cs) != 1 || cs[0].(map[string]any)["encrypted_index"] != "idx_fake_0" || cs[0].(map[string]any)["type"] != "web_search_result_location" {
		t.Errorf("text sent back = %v", text)
	}
}

// TestServerBlocksOfOtherProvider: a server block another provider wrote
// is not sent to Anthropic.
func TestServerBlocksOfOtherProvider(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "ok"})
	p := newProvider(t, srv)
	req := userRequest("hi")
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		{Type: llm.BlockServerToolUse, Provider: "openai", Raw: json.RawMessage(`{"type":"web_search_call"}`)},
		{Type: llm.BlockText, Text: "found", Provider: "openai", Raw: json.RawMessage(`{"type":"message"}`),
			Citations: []llm.Citation{{URL: "https://example.com", Raw: json.RawMessage(`{"type":"url_citation","url":"https://example.com"}`)}}}}},
		llm.UserText("more"))
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	sent := srv.Requests()[0].Body["messages"].([]any)[1].(map[string]any)["content"].([]any)
	if len(sent) != 1 || sent[0].(map[string]any)["type"] != "text" || sent[0].(map[string]any)["citations"] != nil {
		t.Errorf("assistant content = %v, want OpenAI's text without its citations", sent)
	}
}

// TestFakeServerSearchNonStreaming checks the fake's non-streaming
// server-tool answer against the SDK's own decoder.
func TestFakeServerSearchNonStreaming(t *testing.T) {
	srv := llmfake.NewAnthropic(t, searchTurn)
	client := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithAPIKey("k"),
		option.WithBaseURL(srv.URL), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "claude-asked", MaxTokens: 100,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatalf("Messages.New: %v", err)
	}
	if len(msg.Content) != 3 {
		t.Fatalf("content = %s", msg.RawJSON())
	}
	use := msg.Content[0].AsServerToolUse()
	if use.Name != "web_search" || use.ID != "srvtoolu_fake_1_0" {
		t.Errorf("server_tool_use = %s", use.RawJSON())
	}
	res := msg.Content[1].AsWebSearchToolResult()
	if pages := res.Content.OfWebSearchResultBlockArray; len(pages) != 2 || pages[0].URL != "https://example.com/pricing" {
		t.Errorf("web_search_tool_result = %s", res.RawJSON())
	}
	text := msg.Content[2].AsText()
	if len(text.Citations) != 1 || text.Citations[0].AsWebSearchResultLocation().URL != "https://example.com/pricing" {
		t.Errorf("text = %s", text.RawJSON())
	}
	if msg.Usage.ServerToolUse.WebSearchRequests != 1 {
		t.Errorf("usage = %s", msg.Usage.RawJSON())
	}
}

// TestSearchPriced: a search costs a cent on Anthropic's models.
func TestSearchPriced(t *testing.T) {
	p, ok := llm.DefaultPrices.Lookup("anthropic", "claude-sonnet-4-5")
	if !ok {
		t.Fatal("no price")
	}
	if got := p.Cost(llm.Usage{WebSearches: 3}); got != 3 {
		t.Errorf("3 searches cost %v¢, want 3¢ ($10 per 1,000)", got)
	}
}

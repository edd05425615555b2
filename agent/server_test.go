package agent_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
	"github.com/avaagent/ava/llm/llmfake"
)

func anthropicModel(t *testing.T, srv *llmfake.Server) llm.Model {
	t.Helper()
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	price, _ := llm.DefaultPrices.Lookup("anthropic", "claude-sonnet-4-5")
	return llm.Model{Provider: p, ID: "claude-sonnet-4-5", Price: price, Priced: true}
}

// TestServerSearchRun: the provider's search is offered, shown as
// activity, recorded as a tool call, priced, and a paused turn is sent
// back with its server blocks so the model goes on.
func TestServerSearchRun(t *testing.T) {
	srv := llmfake.NewAnthropic(t,
		llmfake.Turn{StopReason: "pause_turn", Usage: llm.Usage{InputTokens: 1000, OutputTokens: 10},
			Searches: []llmfake.Search{{Query: "podcast transcription pricing", Results: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Pricing"}}}}},
		llmfake.Turn{Usage: llm.Usage{InputTokens: 2000, OutputTokens: 30},
			Searches:  []llmfake.Search{{Query: "whisper api price", Results: []llmfake.Cite{{URL: "https://example.org/whisper", Title: "Whisper"}}}},
			Text:      "It costs $0.006 a minute.",
			Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Pricing", CitedText: "$0.006 per minute"}}},
	)
	rec := &recorder{}
	model := anthropicModel(t, srv)
	res := run(t, agent.Config{Model: model, Publisher: rec, Limits: agent.Limits{MaxCostCents: 50},
		ServerTools: &llm.ServerTools{WebSearch: true, MaxUses: 5}}, context.Background())
	if res.Status != lifecycle.Success || res.Text != "It costs $0.006 a minute." || res.Iterations != 2 {
		t.Fatalf("result = %+v", res)
	}
	if res.Usage.WebSearches != 2 {
		t.Errorf("WebSearches = %d, want 2", res.Usage.WebSearches)
	}
	tokens := model.Price.Cost(llm.Usage{InputTokens: 3000, OutputTokens: 40})
	if want := tokens + 2; math.Abs(res.CostCents-want) > 1e-9 {
		t.Errorf("cost = %v¢, want %v¢ (tokens %v¢ + 2 searches at 1¢)", res.CostCents, want, tokens)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].Body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	content := last["content"].([]any)
	if last["role"] != "assistant" || len(content) != 2 || content[0].(map[string]any)["type"] != "server_tool_use" ||
		content[1].(map[string]any)["type"] != "web_search_tool_result" {
		t.Errorf("paused turn sent back as %v", last)
	}
	var activity, calls, results []string
	rec.mu.Lock()
	for _, ev := range rec.evs {
		switch ev.Type {
		case event.Activity:
			var c event.TextContent
			_ = ev.Decode(&c)
			activity = append(activity, c.Text)
		case event.ToolCall:
			var c event.ToolCallContent
			_ = ev.Decode(&c)
			calls = append(calls, c.Name+" "+string(c.Args))
		case event.ToolResult:
			var c event.ToolResultContent
			_ = ev.Decode(&c)
			results = append(results, c.Output)
		}
	}
	rec.mu.Unlock()
	if !contains(activity, "🔍 searching 'podcast transcription pricing'") || !contains(activity, "🔍 searching 'whisper api price'") {
		t.Errorf("activity = %q", activity)
	}
	if len(calls) != 2 || calls[0] != `web_search {"query":"podcast transcription pricing"}` {
		t.Errorf("tool calls = %q", calls)
	}
	if len(results) != 2 || !strings.Contains(results[0], "https://example.com/pricing") {
		t.Errorf("tool results = %q", results)
	}
	if cits := res.Messages[len(res.Messages)-1].Citations(); len(cits) != 1 || cits[0].URL != "https://example.com/pricing" {
		t.Errorf("citations = %+v", cits)
	}
}

// TestServerSearchCapReserve: a call that could run more searches than
// the cost cap has left is not made.
func TestServerSearchCapReserve(t *testing.T) {
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "never"})
	res := run(t, agent.Config{Model: anthropicModel(t, srv), Limits: agent.Limits{MaxCostCents: 3},
		ServerTools: &llm.ServerTools{WebSearch: true, MaxUses: 5}}, context.Background())
	if res.Status != lifecycle.CostExceeded || !errors.Is(res.Err, agent.ErrCostExceeded) || !strings.Contains(res.Err.Error(), "searches") {
		t.Fatalf("result = %+v", res)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests made", n)
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

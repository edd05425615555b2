package ava_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// openAnthropic opens a runtime whose only model key is Anthropic's,
// on a fake Anthropic API; env adds settings.
func openAnthropic(t *testing.T, srv *llmfake.Server, env map[string]string) *ava.Runtime {
	t.Helper()
	vars := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": srv.URL}
	for k, v := range env {
		vars[k] = v
	}
	return openWith(t, vars)
}

// offered lists the tools a request offered: a function tool by name,
// a server tool by type.
func offered(req llmfake.Request) []string {
	var out []string
	tools, _ := req.Body["tools"].([]any)
	for _, x := range tools {
		tool := x.(map[string]any)
		if typ, ok := tool["type"].(string); ok && typ != "custom" {
			out = append(out, typ)
			continue
		}
		out = append(out, tool["name"].(string))
	}
	return out
}

func has(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// A researcher with only an Anthropic key searches through the
// provider: the provider's web search and fetch replace Ava's
// web_search, the run succeeds, its result carries the cited URL, the
// search is counted and priced (and recorded in the audit log like a
// tool call), and the next turn sends the server blocks back unchanged.
func TestResearchWithOnlyAnAnthropicKey(t *testing.T) {
	ctx := testCtx(t)
	srv := llmfake.NewAnthropic(t,
		llmfake.Turn{Usage: llm.Usage{InputTokens: 1000, OutputTokens: 50},
			Searches: []llmfake.Search{{Query: "podcast transcription pricing", Results: []llmfake.Cite{
				{URL: "https://example.com/pricing", Title: "Transcription pricing"}}}},
			Text:      "Transcription costs $0.006 a minute.",
			Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Transcription pricing", CitedText: "$0.006 per minute"}}},
		llmfake.Turn{Text: "Nothing more.", Usage: llm.Usage{InputTokens: 1200, OutputTokens: 5}},
	)
	rt := openAnthropic(t, srv, nil)
	var researcher ava.Role
	for _, r := range rt.Roles() {
		if r.Name == "researcher" {
			researcher = r
		}
	}
	if got := rt.RoleSearch(researcher); !strings.Contains(got, "anthropic's own web search and web fetch") || !strings.Contains(got, "up to 5") {
		t.Errorf("RoleSearch(researcher) = %q", got)
	}
	s, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "podcast transcription pricing"}})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := rt.Wait(ctx, s.Subagent.ID)
	if err != nil || sa.Status != "success" || sa.Result == nil {
		t.Fatalf("run: %+v %v", sa, err)
	}
	if c := sa.Result.Citations; len(c) != 1 || c[0].URL != "https://example.com/pricing" || c[0].CitedText != "$0.006 per minute" {
		t.Errorf("citations = %+v", c)
	}
	price, _ := llm.DefaultPrices.Lookup("anthropic", "claude-sonnet-4-5")
	if want := price.Cost(llm.Usage{InputTokens: 1000, OutputTokens: 50}) + 1; sa.Result.CostCents < want-1e-9 || sa.Result.CostCents > want+1e-9 {
		t.Errorf("cost = %v¢, want %v¢ (tokens and one search at 1¢)", sa.Result.CostCents, want)
	}
	first := srv.Requests()[0]
	tools := offered(first)
	if !has(tools, "web_search_20250305") || !has(tools, "web_fetch_20250910") || has(tools, "web_search") {
		t.Errorf("tools offered = %v, want the provider's search and fetch and not Ava's web_search", tools)
	}
	if !has(tools, "read_webpages") {
		t.Errorf("tools offered = %v, want Ava's read_webpages beside the provider's fetch", tools)
	}
	audit := auditLog(t, rt, `"ToolCall"`, `"podcast transcription pricing"`, "https://example.com/pricing")
	if !strings.Contains(audit, `"ToolCall"`) || !strings.Contains(audit, `"podcast transcription pricing"`) ||
		!strings.Contains(audit, "https://example.com/pricing") {
		t.Errorf("audit log has no web_search call and result:\n%s", audit)
	}

	if _, err := rt.FollowUp(ctx, sa.ID, "anything else?", false, false); err != nil {
		t.Fatal(err)
	}
	if sa, err = rt.Wait(ctx, sa.ID); err != nil || sa.Status != "success" {
		t.Fatalf("follow-up: %+v %v", sa, err)
	}
	msgs := srv.Requests()[1].Body["messages"].([]any)
	var back []any
	for _, m := range msgs {
		if m.(map[string]any)["role"] == "assistant" {
			back = m.(map[string]any)["content"].([]any)
		}
	}
	if len(back) != 3 {
		t.Fatalf("assistant turn sent back = %v", back)
	}
	raw, _ := json.Marshal(back)
	for _, want := range []string{`"type":"server_tool_use"`, `"id":"srvtoolu_fake_1_0"`, `"type":"web_search_tool_result"`,
		`"encrypted_content":"enc_fake_0_0"`, `"encrypted_index":"idx_fake_0"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("sent back without %s: %s", want, raw)
		}
	}
	if strings.Contains(string(raw), "untrusted") {
		t.Errorf("server blocks were wrapped: %s", raw)
	}
}

// With SearXNG configured, auto uses SearXNG: Ava's web_search, not the
// provider's.
func TestResearchAutoPrefersSearXNG(t *testing.T) {
	ctx := testCtx(t)
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "done"})
	rt := openAnthropic(t, srv, map[string]string{"AVA_SEARXNG_URL": "http://127.0.0.1:1"})
	s, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Wait(ctx, s.Subagent.ID); err != nil {
		t.Fatal(err)
	}
	tools := offered(srv.Requests()[0])
	if !has(tools, "web_search") || has(tools, "web_search_20250305") || has(tools, "web_fetch_20250910") {
		t.Errorf("tools offered = %v, want Ava's web_search only", tools)
	}
	for _, r := range rt.Roles() {
		if r.Name == "researcher" {
			if got := rt.RoleSearch(r); got != "SearXNG" {
				t.Errorf("RoleSearch = %q, want SearXNG", got)
			}
		}
	}
}

// web_search: off offers no search at all.
func TestResearchSearchOff(t *testing.T) {
	ctx := testCtx(t)
	srv := llmfake.NewAnthropic(t, llmfake.Turn{Text: "done"})
	rt := openAnthropic(t, srv, map[string]string{"AVA_WEB_SEARCH": "off"})
	s, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Wait(ctx, s.Subagent.ID); err != nil {
		t.Fatal(err)
	}
	tools := offered(srv.Requests()[0])
	if has(tools, "web_search") || has(tools, "web_search_20250305") || has(tools, "web_fetch_20250910") {
		t.Errorf("tools offered = %v, want no search", tools)
	}
}

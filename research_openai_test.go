package ava_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// openWith opens a runtime whose only model key is in env (with the
// fake's address), on a fake OpenAI-wire API.
func openWith(t *testing.T, env map[string]string) *ava.Runtime {
	t.Helper()
	dir := t.TempDir()
	vars := map[string]string{"AVA_DATA_ROOT": filepath.Join(dir, "data"), "AVA_WORKSPACE": dir, "AVA_CONFIRM": "never"}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rt, err := ava.Open(context.Background(), ava.Options{Config: cfg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt
}

// openAIEnv is an OpenAI key on srv, configured as OpenAI's own API
// (openai_kind: a loopback address would otherwise be a server of
// one's own); extra adds settings.
func openAIEnv(srv *llmfake.Server, extra map[string]string) map[string]string {
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1", "AVA_OPENAI_KIND": "openai"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// openAITools lists the tools an OpenAI-wire request offered: a
// function tool by name (top-level on the Responses API, under
// "function" on chat completions), a built-in tool by type.
func openAITools(req llmfake.Request) []string {
	var out []string
	tools, _ := req.Body["tools"].([]any)
	for _, x := range tools {
		tool := x.(map[string]any)
		switch fn, _ := tool["function"].(map[string]any); {
		case tool["type"] != "function":
			out = append(out, tool["type"].(string))
		case fn != nil:
			out = append(out, fn["name"].(string))
		default:
			out = append(out, tool["name"].(string))
		}
	}
	return out
}

// roleSearch is RoleSearch of the named role.
func roleSearch(t *testing.T, rt *ava.Runtime, name string) string {
	t.Helper()
	for _, r := range rt.Roles() {
		if r.Name == name {
			return rt.RoleSearch(r)
		}
	}
	t.Fatalf("no role %s", name)
	return ""
}

// spawnAndWait runs a researcher on task to its end.
func spawnAndWait(t *testing.T, rt *ava.Runtime, task string) ava.Subagent {
	t.Helper()
	ctx := testCtx(t)
	s, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: task}})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := rt.Wait(ctx, s.Subagent.ID)
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

// auditLog is the whole audit log of rt.
//
// The audit log is written in batches after the events (audit.Writer),
// so it waits, up to 10 s, for every one of wants to be in it.
func auditLog(t *testing.T, rt *ava.Runtime, wants ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs, _ := filepath.Glob(filepath.Join(rt.Config().DataRoot, "logs", "ava", "*.jsonl"))
		var out []byte
		for _, f := range logs {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
		missing := slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(string(out), w) })
		if !missing || time.Now().After(deadline) {
			return string(out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A researcher with only an OpenAI key searches through OpenAI: the
// request goes to the Responses API (streamed) with its web_search tool
// beside Ava's function tools and not Ava's web_search, the run
// succeeds, its result carries the cited URL and text, the search is
// counted, priced (1¢) and recorded like a tool call, and the follow-up
// sends the web_search_call item back unchanged.
func TestResearchWithOnlyAnOpenAIKey(t *testing.T) {
	ctx := testCtx(t)
	srv := llmfake.NewOpenAI(t,
		llmfake.Turn{Usage: llm.Usage{InputTokens: 1000, OutputTokens: 50},
			Searches:  []llmfake.Search{{Query: "podcast transcription pricing", Results: []llmfake.Cite{{URL: "https://example.com/pricing"}}}},
			Text:      "Transcription costs $0.006 per minute.",
			Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Transcription pricing", CitedText: "$0.006 per minute"}}},
		llmfake.Turn{Text: "Nothing more.", Usage: llm.Usage{InputTokens: 1200, OutputTokens: 5}},
	)
	rt := openWith(t, openAIEnv(srv, nil))
	if got := roleSearch(t, rt, "researcher"); got != "openai's own web search (Responses API), run by the provider (up to 5 searches a model call)" {
		t.Errorf("RoleSearch(researcher) = %q", got)
	}
	sa := spawnAndWait(t, rt, "podcast transcription pricing")
	if sa.Status != "success" || sa.Result == nil {
		t.Fatalf("run: %+v", sa)
	}
	if c := sa.Result.Citations; len(c) != 1 || c[0].URL != "https://example.com/pricing" || c[0].CitedText != "$0.006 per minute" {
		t.Errorf("citations = %+v", c)
	}
	price, _ := llm.DefaultPrices.Lookup("openai", "gpt-5")
	if want := price.Cost(llm.Usage{InputTokens: 1000, OutputTokens: 50}) + 1; sa.Result.CostCents < want-1e-9 || sa.Result.CostCents > want+1e-9 {
		t.Errorf("cost = %v¢, want %v¢ (tokens and one search at 1¢)", sa.Result.CostCents, want)
	}
	first := srv.Requests()[0]
	if first.Path != "/v1/responses" || first.Body["stream"] != true {
		t.Fatalf("first request: %s stream=%v", first.Path, first.Body["stream"])
	}
	tools := openAITools(first)
	if strings.Count(strings.Join(tools, ","), "web_search") != 1 || !has(tools, "web_search") || !has(tools, "read_webpages") {
		t.Errorf("tools offered = %v, want OpenAI's web_search (not Ava's too) and Ava's read_webpages", tools)
	}
	if raw, _ := json.Marshal(first.Body["tools"]); !strings.Contains(string(raw), `{"type":"web_search"}`) {
		t.Errorf("web_search tool = %s", raw)
	}
	audit := auditLog(t, rt, `"ToolCall"`, `"podcast transcription pricing"`, "https://example.com/pricing")
	if !strings.Contains(audit, `"ToolCall"`) || !strings.Contains(audit, `"podcast transcription pricing"`) ||
		!strings.Contains(audit, "https://example.com/pricing") {
		t.Errorf("audit log has no web_search call and result:\n%s", audit)
	}

	if _, err := rt.FollowUp(ctx, sa.ID, "anything else?", false, false); err != nil {
		t.Fatal(err)
	}
	if sa, err := rt.Wait(ctx, sa.ID); err != nil || sa.Status != "success" {
		t.Fatalf("follow-up: %+v %v", sa, err)
	}
	second := srv.Requests()[1]
	if second.Path != "/v1/responses" {
		t.Fatalf("follow-up went to %s", second.Path)
	}
	input, _ := json.Marshal(second.Body["input"])
	want := `{"action":{"query":"podcast transcription pricing","sources":[{"type":"url","url":"https://example.com/pricing"}],"type":"search"},"id":"ws_fake_1_0","status":"completed","type":"web_search_call"}`
	if !strings.Contains(string(input), want) {
		t.Errorf("follow-up input lacks the search call as it came:\n%s", input)
	}
	if strings.Count(string(input), `"type":"web_search_call"`) != 1 || strings.Contains(string(input), "untrusted") {
		t.Errorf("search call not sent back once, unwrapped:\n%s", input)
	}
}

// With SearXNG configured, auto uses SearXNG on OpenAI too: Ava's
// web_search on chat completions, not the Responses API.
func TestResearchOpenAIAutoPrefersSearXNG(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "done"})
	rt := openWith(t, openAIEnv(srv, map[string]string{"AVA_SEARXNG_URL": "http://127.0.0.1:1"}))
	if got := roleSearch(t, rt, "researcher"); got != "SearXNG" {
		t.Errorf("RoleSearch = %q, want SearXNG", got)
	}
	spawnAndWait(t, rt, "x")
	req := srv.Requests()[0]
	if tools := openAITools(req); req.Path != "/v1/chat/completions" || !has(tools, "web_search") {
		t.Errorf("request %s, tools %v: want Ava's web_search on chat completions", req.Path, tools)
	}
}

// web_search: off offers no search on OpenAI.
func TestResearchOpenAISearchOff(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "done"})
	rt := openWith(t, openAIEnv(srv, map[string]string{"AVA_WEB_SEARCH": "off"}))
	spawnAndWait(t, rt, "x")
	req := srv.Requests()[0]
	if tools := openAITools(req); req.Path != "/v1/chat/completions" || has(tools, "web_search") {
		t.Errorf("request %s, tools %v: want no search", req.Path, tools)
	}
}

// A server of one's own on the openai provider (a loopback address,
// no openai_kind) has no provider search; blocked domains, which
// OpenAI's search cannot apply, keep it off on OpenAI's API too.
func TestResearchOpenAIWhenNoProviderSearch(t *testing.T) {
	srv := llmfake.NewOpenAI(t)
	compat := openWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "AVA_MODEL": "openai/llama3.2"})
	if got := roleSearch(t, compat, "researcher"); !strings.HasPrefix(got, "not configured") {
		t.Errorf("compatible server: RoleSearch = %q", got)
	}
	blocked := openWith(t, openAIEnv(srv, map[string]string{"AVA_WEB_BLOCKED_DOMAINS": "spam.example"}))
	if got := roleSearch(t, blocked, "researcher"); !strings.Contains(got, "openai's web search cannot block web.blocked_domains") {
		t.Errorf("blocked domains: RoleSearch = %q", got)
	}
}

// A researcher with only an OpenRouter key searches through its web
// plugin: the first request carries it, the answer's annotations are
// the result's citations, the search is priced at the plugin's 2¢, and
// the requests sending tool results back carry no plugin.
func TestResearchWithOnlyAnOpenRouterKey(t *testing.T) {
	srv := llmfake.NewOpenAI(t,
		llmfake.Turn{Text: "About $0.006 per minute.", Usage: llm.Usage{InputTokens: 500, OutputTokens: 20},
			Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Pricing", CitedText: "$0.006 per minute"}}})
	rt := openWith(t, map[string]string{"OPENROUTER_API_KEY": "sk-or-test", "OPENROUTER_BASE_URL": srv.URL + "/v1"})
	if got := roleSearch(t, rt, "researcher"); !strings.HasPrefix(got, "openrouter's web plugin") || !strings.Contains(got, "at most one search") {
		t.Errorf("RoleSearch = %q", got)
	}
	sa := spawnAndWait(t, rt, "podcast transcription pricing")
	if sa.Status != "success" || sa.Result == nil {
		t.Fatalf("run: %+v", sa)
	}
	if c := sa.Result.Citations; len(c) != 1 || c[0].URL != "https://example.com/pricing" || c[0].CitedText != "$0.006 per minute" {
		t.Errorf("citations = %+v", c)
	}
	req := srv.Requests()[0]
	plugins, _ := json.Marshal(req.Body["plugins"])
	if req.Path != "/v1/chat/completions" || string(plugins) != `[{"engine":"exa","id":"web","max_results":5}]` {
		t.Errorf("request %s plugins %s", req.Path, plugins)
	}
	price, _ := llm.DefaultPrices.Lookup("openrouter", "anthropic/claude-sonnet-4.5")
	if price.PerSearch != llm.OpenRouterSearchCents {
		t.Errorf("per search = %v¢, want OpenRouter's %v¢", price.PerSearch, llm.OpenRouterSearchCents)
	}
	if want := price.Cost(llm.Usage{InputTokens: 500, OutputTokens: 20, WebSearches: 1}); sa.Result.CostCents < want-1e-9 || sa.Result.CostCents > want+1e-9 {
		t.Errorf("cost = %v¢, want %v¢", sa.Result.CostCents, want)
	}
}

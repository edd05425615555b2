package main_test

import (
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// TestSpawnResearcherWithOnlyAnAnthropicKey: the real program, with only
// an Anthropic key (on a fake Anthropic API), spawns a researcher that
// searches through the provider and prints its sources, and ava roles
// says so.
func TestSpawnResearcherWithOnlyAnAnthropicKey(t *testing.T) {
	fake := llmfake.NewAnthropic(t, llmfake.Turn{Usage: llm.Usage{InputTokens: 800, OutputTokens: 40},
		Searches:  []llmfake.Search{{Query: "podcast transcription pricing", Results: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Transcription pricing"}}}},
		Text:      "About $0.006 a minute.",
		Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Transcription pricing", CitedText: "$0.006 per minute"}}})
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-secret", "ANTHROPIC_BASE_URL": fake.URL, "AVA_DATA_ROOT": t.TempDir()}
	out, errOut, code := ava(t, env, "roles")
	if code != 0 || !strings.Contains(out, "web_search of researcher: anthropic's own web search and web fetch") {
		t.Fatalf("roles: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = ava(t, env, "spawn", "--role", "researcher", "--wait", "podcast transcription pricing")
	if code != 0 {
		t.Fatalf("spawn: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "status: success") ||
		!strings.Contains(out, "sources:\n1. Transcription pricing <https://example.com/pricing>: \"$0.006 per minute\"\n") {
		t.Fatalf("spawn output:\n%s", out)
	}
	tools, _ := fake.Requests()[0].Body["tools"].([]any)
	var types []string
	for _, x := range tools {
		if typ, ok := x.(map[string]any)["type"].(string); ok {
			types = append(types, typ)
		}
	}
	if !strings.Contains(strings.Join(types, ","), "web_search_20250305") {
		t.Fatalf("tools offered: %v", tools)
	}
}

// TestSpawnResearcherWithOnlyAnOpenAIKey: the real program, with only an
// OpenAI key (on a fake OpenAI API configured as OpenAI's own with
// AVA_OPENAI_KIND), spawns a researcher that searches through OpenAI's
// Responses API and prints its sources, and ava roles says so.
func TestSpawnResearcherWithOnlyAnOpenAIKey(t *testing.T) {
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Usage: llm.Usage{InputTokens: 800, OutputTokens: 40},
		Searches:  []llmfake.Search{{Query: "podcast transcription pricing", Results: []llmfake.Cite{{URL: "https://example.com/pricing"}}}},
		Text:      "About $0.006 per minute.",
		Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Transcription pricing", CitedText: "$0.006 per minute"}}})
	env := map[string]string{"OPENAI_API_KEY": "sk-test-secret", "OPENAI_BASE_URL": fake.URL + "/v1", "AVA_OPENAI_KIND": "openai",
		"AVA_DATA_ROOT": t.TempDir()}
	out, errOut, code := ava(t, env, "roles")
	if code != 0 || !strings.Contains(out, "web_search of researcher: openai's own web search (Responses API)") {
		t.Fatalf("roles: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = ava(t, env, "spawn", "--role", "researcher", "--wait", "podcast transcription pricing")
	if code != 0 {
		t.Fatalf("spawn: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "status: success") ||
		!strings.Contains(out, "sources:\n1. Transcription pricing <https://example.com/pricing>: \"$0.006 per minute\"\n") {
		t.Fatalf("spawn output:\n%s", out)
	}
	if req := fake.Requests()[0]; req.Path != "/v1/responses" {
		t.Fatalf("request went to %s", req.Path)
	}
}

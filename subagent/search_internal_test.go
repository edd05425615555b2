package subagent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
)

// The [Subagent] message lists the result's sources inside the
// untrusted block the orchestrator reads (their cited text is a web
// page's), and the digest still parses it.
func TestAnnouncementListsSources(t *testing.T) {
	r := Result{SubagentID: "S-0a0b0c", Status: lifecycle.Success, Summary: "about $0.006 a minute",
		Output: json.RawMessage(`"about $0.006 a minute"`), OutputFormat: "text",
		Citations: []llm.Citation{{URL: "https://example.com/pricing", Title: "Transcription pricing", CitedText: "$0.006 per minute"}}}
	msg := announcement("ava:cli:x", "run-1", "pricing", r, "")
	want := "Sources:\n1. Transcription pricing <https://example.com/pricing>: \"$0.006 per minute\"\n"
	if !strings.Contains(msg.Text, want) {
		t.Fatalf("announcement without its sources:\n%s", msg.Text)
	}
	var m llm.Message
	if err := json.Unmarshal(msg.Blocks, &m); err != nil {
		t.Fatal(err)
	}
	prompt := m.TextContent()
	if !strings.HasPrefix(prompt, "[Subagent] ") || !strings.Contains(prompt, "https://example.com/pricing") ||
		strings.Index(prompt, "$0.006 per minute") < strings.Index(prompt, "untrusted") {
		t.Fatalf("the orchestrator's message:\n%s", prompt)
	}
	if a := orchestrator.ParseAnnouncement(msg.Text); a.ID != "S-0a0b0c" || a.Status != "success" {
		t.Fatalf("digest parsed %+v", a)
	}
}

// citationsOf keeps the first citation of each URL over the turn's
// answers, without the provider's raw objects.
func TestCitationsOf(t *testing.T) {
	cite := func(url string) llm.Citation {
		return llm.Citation{URL: url, Raw: json.RawMessage(`{"type":"web_search_result_location"}`)}
	}
	msgs := []llm.Message{
		{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: "a", Citations: []llm.Citation{cite("https://a"), cite("https://b")}}}},
		{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "x", Citations: []llm.Citation{cite("https://user")}}}},
		{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: "b", Citations: []llm.Citation{cite("https://b"), cite("https://c")}}}},
	}
	got := citationsOf(msgs)
	if len(got) != 3 || got[0].URL != "https://a" || got[1].URL != "https://b" || got[2].URL != "https://c" || got[0].Raw != nil {
		t.Fatalf("citations = %+v", got)
	}
}

package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
)

func TestFormatLine(t *testing.T) {
	at := time.Date(2026, 11, 20, 14, 5, 30, 0, time.UTC)
	user := ev(at, "ava", event.UserMessage, event.TextContent{Text: "Research podcast\ntranscription pricing"})
	user.User = "ben"
	start := ev(at, "ava", event.SessionStart, event.SessionContent{Model: "scripted/demo", Offline: true})
	start.Session = "sess-123"
	for _, tc := range []struct {
		e    event.Event
		want string
	}{
		{user, `[14:05:30] UserMessage (ben) Research podcast ⏎ transcription pricing`},
		{ev(at, "ava", event.AssistantMessage, event.TextContent{Text: "Found 5 competitors"}), `[14:05:30] AssistantMessage Found 5 competitors`},
		{ev(at, "S-7f3a2b", event.ToolCall, event.ToolCallContent{Name: "web_search", Args: json.RawMessage(`{"query":"podcast transcription pricing 2024","n":5}`)}),
			`[14:05:30] ToolCall web_search {"query": "podcast transcription pricing 2024", "n": 5}`},
		{ev(at, "S-7f3a2b", event.ToolResult, event.ToolResultContent{Name: "web_search", Success: true, Output: strings.Repeat("r", 1234)}),
			`[14:05:30] ToolResult web_search (success, 1234 chars)`},
		{ev(at, "S-7f3a2b", event.ToolResult, event.ToolResultContent{Name: "read_file", Output: "no such file"}),
			`[14:05:30] ToolResult read_file (failed, 12 chars) no such file`},
		{ev(at, "ava", event.SubagentSpawn, event.SubagentSpawnContent{SubagentID: "S-7f3a2b", Role: "web_crawler", Task: "research", Model: "anthropic/haiku", Mode: "single"}),
			`[14:05:30] SubagentSpawn S-7f3a2b role=web_crawler model=anthropic/haiku mode=single "research"`},
		{ev(at, "ava", event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-7f3a2b", Status: "success", Tokens: 45000, CostCents: 24, DurationMs: 135_400}),
			`[14:05:30] SubagentComplete S-7f3a2b status=success cost=24.0¢ tokens=45000 duration=2m15s`},
		{ev(at, "S-7f3a2b", event.ExtendedThinking, event.ThinkingContent{Thinking: "Looking at search results"}),
			`[14:05:30] Thinking: "Looking at search results"`},
		{ev(at, "S-7f3a2b", event.CostUpdate, event.CostContent{InputTokens: 1000, OutputTokens: 200, CostCents: 0.42, TotalTokens: 45000, TotalCostCents: 24}),
			`[14:05:30] CostUpdate tokens=1200 cost=0.42¢ (run: tokens=45000 cost=24.0¢)`},
		{ev(at, "ava", event.Error, event.ErrorContent{Error: "model overloaded", Fatal: true}), `[14:05:30] Error: model overloaded (fatal)`},
		{start, `[14:05:30] SessionStart session=sess-123 model=scripted/demo (offline scripted model)`},
		{ev(at, "ava", event.SessionEnd, event.SessionContent{Status: "cancelled"}), `[14:05:30] SessionEnd session=ava:cli:test status=cancelled`},
		{ev(at, "S-7f3a2b", event.FindingPosted, event.FindingContent{FindingID: 4, GroupID: "g", SubagentID: "S-7f3a2b", Role: "researcher", Text: "the API\nis paged"}),
			`[14:05:30] FindingPosted #4 S-7f3a2b role=researcher the API ⏎ is paged`},
		{ev(at, "ava", "FutureType", map[string]int{"x": 1}), `[14:05:30] FutureType {"x": 1}`},
	} {
		if got := FormatLine(tc.e, FormatOptions{}); got != tc.want {
			t.Errorf("FormatLine(%s)\n got %s\nwant %s", tc.e.Type, got, tc.want)
		}
	}
}

func TestFormatLineOptions(t *testing.T) {
	at := time.Date(2026, 11, 20, 23, 30, 0, 0, time.UTC)
	e := ev(at, "S-7f3a2b", event.AssistantMessage, event.TextContent{Text: strings.Repeat("é", 1300)})
	got := FormatLine(e, FormatOptions{MaxContent: 50, ShowAgent: true, ShowDate: true, Location: time.FixedZone("X", 3600)})
	want := "[2026-11-21 00:30:00] S-7f3a2b AssistantMessage " + strings.Repeat("é", 50) + "… [+1250 chars]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := FormatLine(ev(at, "ava", event.UserMessage, event.TextContent{Text: "x"}), FormatOptions{ShowAgent: true}); !strings.HasPrefix(got, "[23:30:00] ava      UserMessage") {
		t.Errorf("agent column: %q", got)
	}
	plain := FormatLine(ev(at, "ava", event.Error, event.ErrorContent{Error: "boom"}), FormatOptions{})
	colored := FormatLine(ev(at, "ava", event.Error, event.ErrorContent{Error: "boom"}), FormatOptions{Color: true})
	if strings.Contains(plain, "\x1b[") || !strings.Contains(colored, "\x1b[31mError:\x1b[0m") {
		t.Errorf("plain %q colored %q", plain, colored)
	}
	if got := FormatLine(e, FormatOptions{}); len([]rune(got)) > 250 {
		t.Errorf("default shortening left %d characters", len([]rune(got)))
	}
}

package audit

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
)

var timestampRE = regexp.MustCompile(`^"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"$`)

func sortedKeys(m map[string]json.RawMessage) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

func wantKeys(ks ...string) string {
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

// TestAuditLineSchema writes one entry of every audit type through the
// writer and checks each stored line against DESIGN.md's fields.
func TestAuditLineSchema(t *testing.T) {
	contents := map[event.Type]struct {
		c    any
		keys string
	}{
		event.UserMessage:      {event.TextContent{Text: "hi"}, "text"},
		event.AssistantMessage: {event.TextContent{Text: "hello"}, "text"},
		event.ToolCall:         {event.ToolCallContent{ID: "c1", Name: "web_search", Args: json.RawMessage(`{"query":"x"}`)}, "args,id,name"},
		event.ToolResult:       {event.ToolResultContent{ID: "c1", Name: "web_search", Success: true, Output: "r"}, "id,name,output,success"},
		event.SubagentSpawn:    {event.SubagentSpawnContent{SubagentID: "S-7f3a2b", Role: "web_crawler", Task: "t", Model: "m", Mode: "single"}, "mode,model,role,subagentId,task"},
		event.SubagentComplete: {event.SubagentCompleteContent{SubagentID: "S-7f3a2b", Status: "success", Summary: "s", Tokens: 45000, CostCents: 24, DurationMs: 1000, Iterations: 3}, "costCents,durationMs,iterations,status,subagentId,summary,tokens"},
		event.ExtendedThinking: {event.ThinkingContent{Thinking: "hmm"}, "thinking"},
		event.CostUpdate:       {event.CostContent{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, CostCents: 0.5, TotalTokens: 10, TotalCostCents: 1, Unpriced: true}, "cacheReadTokens,cacheWriteTokens,costCents,inputTokens,outputTokens,totalCostCents,totalTokens,unpriced"},
		event.Error:            {event.ErrorContent{Error: "boom", Fatal: true}, "error,fatal"},
		event.SessionStart:     {event.SessionContent{Model: "m", Offline: true}, "model,offline"},
		event.SessionEnd:       {event.SessionContent{Status: "success"}, "status"},
		event.FindingPosted:    {event.FindingContent{FindingID: 3, GroupID: "g", SubagentID: "S-7f3a2b", Role: "researcher", Text: "found"}, "findingId,groupId,role,subagentId,text"},
	}
	if len(contents) != len(event.AuditTypes) {
		t.Fatalf("schema covers %d types, the audit log has %d", len(contents), len(event.AuditTypes))
	}
	root := t.TempDir()
	w := newTestWriter(t, root, Options{})
	for i, typ := range event.AuditTypes {
		e := ev(day1.Add(time.Duration(i)*time.Microsecond+456*time.Microsecond), "S-7f3a2b", typ, contents[typ].c)
		e.Seq, e.User = uint64(i+1), "ben"
		e.Meta = event.Meta{InputTokens: 1, OutputTokens: 2, CostCents: 0.3, ModelID: "m", ParentAgentID: "ava", DurationMs: 5}
		writeAll(t, w, e)
	}
	bare := ev(day1, "ava", event.SessionEnd, event.SessionContent{})
	writeAll(t, w, bare)

	data, err := os.ReadFile(DailyPath(root, day1))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(event.AuditTypes)+1 {
		t.Fatalf("%d lines, want %d", len(lines), len(event.AuditTypes)+1)
	}
	for i, typ := range event.AuditTypes {
		m := keys(t, []byte(lines[i]))
		if got, want := sortedKeys(m), wantKeys("seq", "timestamp", "sessionId", "agentId", "userId", "eventType", "content", "metadata"); got != want {
			t.Errorf("%s: keys %s, want %s", typ, got, want)
		}
		if string(m["eventType"]) != `"`+string(typ)+`"` || !timestampRE.Match(m["timestamp"]) {
			t.Errorf("%s: eventType %s timestamp %s", typ, m["eventType"], m["timestamp"])
		}
		if got := sortedKeys(keys(t, m["metadata"])); got != wantKeys("inputTokens", "outputTokens", "costCents", "modelId", "parentAgentId", "durationMs") {
			t.Errorf("%s: metadata keys %s", typ, got)
		}
		// Content belongs to the event package and may grow; the keys
		// readers and FormatLine rely on must be there.
		content := keys(t, m["content"])
		for k := range strings.SplitSeq(contents[typ].keys, ",") {
			if _, ok := content[k]; !ok {
				t.Errorf("%s: content %s lacks %q", typ, m["content"], k)
			}
		}
	}
	// Optional fields are left out; the required ones stay.
	m := keys(t, []byte(lines[len(lines)-1]))
	if got := sortedKeys(m); got != wantKeys("timestamp", "sessionId", "agentId", "eventType", "content", "metadata") {
		t.Errorf("bare entry keys %s", got)
	}
	if string(m["metadata"]) != "{}" || string(m["content"]) != "{}" || string(m["timestamp"]) != `"2026-11-20T14:05:30.123Z"` {
		t.Errorf("bare entry %s", lines[len(lines)-1])
	}
}

func TestLifecycleEntrySchema(t *testing.T) {
	start := startEntry("job_01")
	start.StartedAt = day1.In(time.FixedZone("CET", 3600))
	done := startEntry("job_01")
	done.PID = 0
	done.EventType, done.CompletedAt, done.DurationMs = SubagentComplete, day1.Add(12345*time.Millisecond), 12345
	done.Status, done.Summary, done.OutputPath = "success", "done", "/data/sessions/outputs/job_01.txt"
	base := []string{"type", "timestamp", "eventType", "jobId", "requestedBy", "agentName", "mode", "startedAt", "model", "usage"}
	for _, tc := range []struct {
		e    LifecycleEntry
		keys string
	}{
		{start, wantKeys(append(base, "pid")...)},
		{done, wantKeys(append(base, "completedAt", "durationMs", "status", "summary", "outputPath")...)},
	} {
		raw, err := json.Marshal(tc.e)
		if err != nil {
			t.Fatal(err)
		}
		m := keys(t, raw)
		if got := sortedKeys(m); got != tc.keys {
			t.Errorf("%s keys %s, want %s", tc.e.EventType, got, tc.keys)
		}
		if string(m["type"]) != `"agent_event"` || string(m["startedAt"]) != `"2026-11-20T14:05:30.123Z"` {
			t.Errorf("type %s startedAt %s", m["type"], m["startedAt"])
		}
		if got := sortedKeys(keys(t, m["usage"])); got != wantKeys("input", "output", "cacheRead", "cacheWrite", "cost") {
			t.Errorf("usage keys %s", got)
		}
		if got := sortedKeys(keys(t, keys(t, m["usage"])["cost"])); got != "total" {
			t.Errorf("usage.cost keys %s", got)
		}
	}
	raw, _ := json.Marshal(done)
	if !strings.Contains(string(raw), `"completedAt":"2026-11-20T14:05:42.468Z","durationMs":12345`) {
		t.Errorf("complete entry %s", raw)
	}
	var back LifecycleEntry
	if err := json.Unmarshal([]byte(`{"type":"message"}`), &back); err == nil {
		t.Error("a non agent_event line decoded as a lifecycle entry")
	}
}

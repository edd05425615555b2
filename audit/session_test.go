package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/redact"

	"github.com/google/go-cmp/cmp"
)

func readLifecycle(t *testing.T, path string) ([]LifecycleEntry, []Skip) {
	t.Helper()
	var out []LifecycleEntry
	var skips []Skip
	if err := ScanLifecycle(path, func(e LifecycleEntry) error { out = append(out, e); return nil },
		func(s Skip) { skips = append(skips, s) }); err != nil {
		t.Fatal(err)
	}
	return out, skips
}

func startEntry(job string) LifecycleEntry {
	return LifecycleEntry{Timestamp: day1, EventType: SubagentStart, JobID: job, RequestedBy: "ben",
		AgentName: "web_crawler", Mode: ModeSingle, PID: 4242, StartedAt: day1, Model: "anthropic/claude-sonnet-4-5"}
}

func TestSessionLogRoundTrip(t *testing.T) {
	root := t.TempDir()
	sl, err := NewSessionLogs(root, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := startEntry("S-7f3a2b")
	done := start
	done.EventType, done.CompletedAt, done.DurationMs = SubagentComplete, day1.Add(12345*time.Millisecond), 12345
	done.Usage = Usage{Input: 1000, Output: 200, CacheRead: 50, CacheWrite: 5, Cost: Cost{Total: 0.24}}
	done.Status, done.Summary = "success", "Found 5 competitors"
	for _, e := range []LifecycleEntry{start, done} {
		if err := sl.Append("ava:telegram:42", e); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(root, "sessions", "ava_telegram_42.jsonl")
	got, skips := readLifecycle(t, path)
	if diff := cmp.Diff([]LifecycleEntry{start, done}, got); diff != "" || len(skips) > 0 {
		t.Errorf("read back (-want +got):\n%s skips %v", diff, skips)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, SessionDir(root): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, fi.Mode(), err, want)
		}
	}
}

func TestSessionLogValidates(t *testing.T) {
	sl, _ := NewSessionLogs(t.TempDir(), SessionOptions{})
	for name, mutate := range map[string]func(*LifecycleEntry){
		"eventType":   func(e *LifecycleEntry) { e.EventType = "subagent:progress" },
		"mode":        func(e *LifecycleEntry) { e.Mode = "swarm" },
		"jobId":       func(e *LifecycleEntry) { e.JobID = "" },
		"startedAt":   func(e *LifecycleEntry) { e.StartedAt = time.Time{} },
		"completedAt": func(e *LifecycleEntry) { e.EventType = SubagentError },
	} {
		e := startEntry("job")
		mutate(&e)
		if err := sl.Append("ava:cli:x", e); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v does not name the field", name, err)
		}
	}
	if err := sl.Append("", startEntry("job")); err == nil {
		t.Error("empty session key accepted")
	}
}

func TestSessionLogDefaults(t *testing.T) {
	root := t.TempDir()
	sl, _ := NewSessionLogs(root, SessionOptions{Clock: func() time.Time { return day1 }})
	e := startEntry("j1")
	e.Timestamp, e.RequestedBy = time.Time{}, ""
	if err := sl.Append("s", e); err != nil {
		t.Fatal(err)
	}
	got, _ := readLifecycle(t, SessionPath(root, "s"))
	if got[0].RequestedBy != "assistant" || !got[0].Timestamp.Equal(day1) {
		t.Errorf("defaults: requestedBy %q timestamp %v", got[0].RequestedBy, got[0].Timestamp)
	}
}

func TestSessionLogMovesLargeOutputToAFile(t *testing.T) {
	root := t.TempDir()
	sl, _ := NewSessionLogs(root, SessionOptions{Secrets: []string{"s3cr3t-value"}})
	long := strings.Repeat("finding s3cr3t-value. ", 200) // > 2 KiB
	e := startEntry("job/1")
	e.EventType, e.CompletedAt, e.Summary = SubagentComplete, day1, long
	if err := sl.Append("ava:cli:a", e); err != nil {
		t.Fatal(err)
	}
	out := startEntry("job-2")
	out.EventType, out.CompletedAt, out.Summary, out.Output = SubagentComplete, day1, "short", `{"items":[1,2,3]}`
	if err := sl.Append("ava:cli:a", out); err != nil {
		t.Fatal(err)
	}
	got, _ := readLifecycle(t, SessionPath(root, "ava:cli:a"))
	wantPath := filepath.Join(OutputDir(root), "job_1.txt")
	if got[0].OutputPath != wantPath || len(got[0].Summary) > 300 || !strings.Contains(got[0].Summary, "… [+") {
		t.Errorf("large summary: outputPath %q summary %q", got[0].OutputPath, got[0].Summary)
	}
	data, err := os.ReadFile(wantPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "s3cr3t-value") || !strings.Contains(string(data), "finding "+redact.Redacted) {
		t.Errorf("output file not redacted: %.60s", data)
	}
	if got[1].OutputPath != filepath.Join(OutputDir(root), "job-2.json") || got[1].Summary != "short" {
		t.Errorf("output: %+v", got[1])
	}
	if data, _ := os.ReadFile(got[1].OutputPath); string(data) != `{"items":[1,2,3]}` {
		t.Errorf("output file holds %s", data)
	}
	raw, _ := os.ReadFile(SessionPath(root, "ava:cli:a"))
	if len(raw) > 2000 {
		t.Errorf("session file holds %d bytes: large output was inlined", len(raw))
	}
}

func TestSessionLogConcurrentAppendsAndTornFile(t *testing.T) {
	root := t.TempDir()
	path := SessionPath(root, "ava:cli:c")
	entry, _ := startEntry("torn").MarshalJSON()
	writeLines(t, path, `{"type":"message","role":"user"}`+"\n", entry[:30]) // crash mid-line
	sl, _ := NewSessionLogs(root, SessionOptions{})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := sl.Append("ava:cli:c", startEntry(fmt.Sprintf("job-%02d", i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, skips := readLifecycle(t, path)
	if len(got) != 50 {
		t.Errorf("%d entries, want 50", len(got))
	}
	if len(skips) != 1 || skips[0].Line != 2 {
		t.Errorf("skips %v, want only the torn line 2", skips)
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"ava:subagent:S-7f3a2b": "ava_subagent_S-7f3a2b",
		"ava:web:a/b\\c":        "ava_web_a_b_c",
		"../../etc/passwd":      "_._.._etc_passwd",
		".hidden":               "_hidden",
		"":                      "_",
		"café":                  "caf__",
	} {
		if got := SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := filepath.Base(SessionPath("/r", "ava:cli:1")); got != "ava_cli_1.jsonl" {
		t.Errorf("SessionPath base %s", got)
	}
}

// DeliverBatch writes a commit's lifecycle entries in order (one write
// and sync for all), skips the events that are not lifecycle entries and fails only
// the entry that is invalid.
func TestSessionLogsDeliverBatch(t *testing.T) {
	root := t.TempDir()
	sl, err := NewSessionLogs(root, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spawn := func(id string) event.Event {
		return ev(day1, "ava", event.SubagentSpawn, event.SubagentSpawnContent{SubagentID: id, Role: "web_crawler", Task: "t", Model: "m", Mode: "single"})
	}
	evs := []event.Event{spawn("S-000001"), text(day1, "ava", "hello"), spawn(""), spawn("S-000002"),
		ev(day1, "ava", event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-000001", Role: "web_crawler", Mode: "single", Model: "m", Status: "success", StartedAt: day1, Summary: "done"})}
	errs := sl.DeliverBatch(evs)
	if len(errs) != len(evs) {
		t.Fatalf("%d errors for %d events", len(errs), len(evs))
	}
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Errorf("event %d: error %v; want one for the entry without a job ID only", i, err)
		}
	}
	got, skips := readLifecycle(t, SessionPath(root, "ava:cli:test"))
	var jobs []string
	for _, e := range got {
		jobs = append(jobs, string(e.EventType)+" "+e.JobID)
	}
	want := []string{"subagent:start S-000001", "subagent:start S-000002", "subagent:complete S-000001"}
	if diff := cmp.Diff(want, jobs); diff != "" || len(skips) > 0 {
		t.Errorf("session file (-want +got):\n%s skips %v", diff, skips)
	}
}

// The session file's agent_event line speaks seed 002's words: status
// completed, failed or aborted, the cause in reason (issue 40 item 4);
// a line written before, with Ava's own status word, still reads.
func TestLifecycleLineUsesSeedWords(t *testing.T) {
	e := startEntry("S-7f3a2b")
	e.EventType, e.CompletedAt, e.Status = SubagentError, day1.Add(time.Second), "timeout"
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"status":"failed","reason":"timeout"`) {
		t.Fatalf("line %s", b)
	}
	var back LifecycleEntry
	if err := back.UnmarshalJSON(b); err != nil || back.Status != "timeout" {
		t.Fatalf("read back %q, %v", back.Status, err)
	}
	old := strings.Replace(string(b), `"status":"failed","reason":"timeout"`, `"status":"cost_exceeded"`, 1)
	if err := back.UnmarshalJSON([]byte(old)); err != nil || back.Status != "cost_exceeded" {
		t.Fatalf("an older line read back %q, %v", back.Status, err)
	}
}

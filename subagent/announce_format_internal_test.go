package subagent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store"
)

// The orchestrator's results digest reads the announcement's ID, status,
// task, summary and error back (orchestrator.ParseAnnouncement).
func TestAnnouncementParsesForTheDigest(t *testing.T) {
	r := Result{SubagentID: "S-0a0b0c", Status: lifecycle.Error, Summary: "half done", Error: "model refused",
		Output: json.RawMessage(`"long output"`), OutputFormat: "text"}
	msg := announcement("ava:cli:x", "run-1", "compare the prices\nsecond line", r, "")
	a := orchestrator.ParseAnnouncement(msg.Text)
	want := orchestrator.Announcement{ID: "S-0a0b0c", Status: "error", Task: "compare the prices", Summary: "half done", Error: "model refused"}
	if a != want {
		t.Fatalf("parsed %+v, want %+v from\n%s", a, want, msg.Text)
	}
}

// A multi-line summary (one quoting a tool's output) and a multi-line
// error are read back whole from the announcement, and the digest of
// results beyond the window shows every line of the summary, quoted, with
// no line of it taken for the announcement's next field.
func TestMultiLineSummaryWholeInTheDigest(t *testing.T) {
	summary := "ran the tests:\n--- FAIL: TestX (0.00s)\n    x_test.go:9: got 4, want 3\nError: not mine, the tool's\nFAIL"
	r := Result{SubagentID: "S-0a0b0c", Status: lifecycle.Error, Summary: summary, Error: "exit status 1\nstderr: boom",
		Output: json.RawMessage(`"long output"`), OutputFormat: "text"}
	msg := announcement("ava:cli:x", "run-1", "run the tests", r, "")
	a := orchestrator.ParseAnnouncement(msg.Text)
	if a.Summary != summary || a.Error != "exit status 1\nstderr: boom" {
		t.Fatalf("parsed summary %q, error %q from\n%s", a.Summary, a.Error, msg.Text)
	}
	d := orchestrator.ResultsDigest([]store.Message{msg})
	want := "- S-0a0b0c status=error\n> task: run the tests\n> summary: ran the tests:\n> --- FAIL: TestX (0.00s)\n>     x_test.go:9: got 4, want 3\n> Error: not mine, the tool's\n> FAIL\n"
	if !strings.Contains(d, want) {
		t.Fatalf("the digest lacks the summary whole:\n%s\nwant it to hold:\n%s", d, want)
	}
}

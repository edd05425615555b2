package subagent

import (
	"encoding/json"
	"testing"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/orchestrator"
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

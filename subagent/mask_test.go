package subagent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/subagent"
)

// TestResultMaskedCoversEveryText plants a secret in every free text of
// a Result and a RunStatus: Masked leaves none, and keeps the figures.
func TestResultMaskedCoversEveryText(t *testing.T) {
	const secret = "opensesame-99-value"
	red := redact.New(redact.Options{Secrets: []string{secret}})
	out, _ := json.Marshal(map[string]string{"token": secret})
	r := subagent.Result{SubagentID: "S-abcdef", Status: "error", Summary: "saw " + secret, Output: out, OutputFormat: "json",
		Error: "failed with " + secret, TokensUsed: 7, Partial: &subagent.Partial{Text: "so far " + secret,
			ToolResults: []subagent.PartialTool{{Tool: "read_file", OK: true, Excerpt: secret}}}}
	m := r.Masked(red)
	b, _ := json.Marshal(m)
	if strings.Contains(string(b), secret) || m.TokensUsed != 7 || m.SubagentID != "S-abcdef" {
		t.Fatalf("masked result: %s", b)
	}
	if r.Partial.Text != "so far "+secret {
		t.Error("Masked changed the caller's partial work")
	}
	st := subagent.RunStatus{ID: "S-abcdef", Task: "use " + secret, Activity: "read_file " + secret}.Masked(red)
	if b, _ := json.Marshal(st); strings.Contains(string(b), secret) {
		t.Fatalf("masked status: %s", b)
	}
	if got := (subagent.Result{Summary: "ghp_16C7e42F292c6912E7710c838347Ae178B4a"}).Masked(nil).Summary; got != redact.Redacted {
		t.Errorf("a nil redactor must still mask credential formats: %q", got)
	}
}

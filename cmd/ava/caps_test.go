package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// delegateScript has the orchestrator spawn two researchers on the
// script itself; each wants to write 40,000 output tokens (20¢ at the
// configured price).
const delegateScript = `
conversations:
  - match: "specialized .* subagent"
    turns:
      - text: "A long answer."
        usage: {input: 1000, output: 40000}
  - turns:
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: a}}]
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: b}}]
      - text: "done"
`

// A session budget of 3¢ used to let the first subagent spend 20.1¢ and
// end success: its final answer was made with no output limit and kept.
// Now its calls are bounded by what is left, so it stops at or below the
// cap and ends cost_exceeded.
func TestBudgetBoundsTheSubagentsCalls(t *testing.T) {
	root := t.TempDir()
	script := filepath.Join(t.TempDir(), "delegate.yaml")
	must(t, os.WriteFile(script, []byte(strings.ReplaceAll(delegateScript, "SCRIPT", script)), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "config.yaml"), []byte("prices:\n  delegate.yaml: {input: 100, output: 500}\n"), 0o600))
	operatorSubagentScript(t, root, script)
	env := map[string]string{"AVA_DATA_ROOT": root}
	if _, errOut, code := ava(t, env, "run", "--budget", "3", "--model", "scripted/"+script, "go"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out, _, _ := ava(t, env, "logs", "--type", "SubagentComplete", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("no SubagentComplete logged")
	}
	for i, l := range lines {
		var e struct {
			Content struct {
				Status    string  `json:"status"`
				CostCents float64 `json:"costCents"`
			} `json:"content"`
		}
		must(t, json.Unmarshal([]byte(l), &e))
		if e.Content.Status != "cost_exceeded" || e.Content.CostCents > 3 {
			t.Errorf("subagent %s at %.4f¢ on a 3¢ budget: %s", e.Content.Status, e.Content.CostCents, l)
		}
		if i == 0 && e.Content.CostCents < 2 {
			t.Errorf("the first subagent spent %.4f¢: it should use most of the 3¢ before its answer is cut", e.Content.CostCents)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

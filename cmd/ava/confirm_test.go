package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spawnOnceScript has the orchestrator spawn one researcher (on the
// script itself, which answers it) and then finish.
const spawnOnceScript = `
conversations:
  - match: "specialized .* subagent"
    turns:
      - text: "found it"
        usage: {input: 100, output: 10}
  - turns:
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: look, model: "scripted/SCRIPT", rationale: "it needs reading"}}]
      - text: "done"
`

// TestRunYesSkipsConfirmation: under AVA_CONFIRM=always a spawn from
// `ava run` becomes a proposal and nothing runs; with --yes it runs, and
// `ava roles --stats` then counts it.
func TestRunYesSkipsConfirmation(t *testing.T) {
	root := t.TempDir()
	script := filepath.Join(t.TempDir(), "spawn.yaml")
	must(t, os.WriteFile(script, []byte(strings.ReplaceAll(spawnOnceScript, "SCRIPT", script)), 0o600))
	env := map[string]string{"AVA_DATA_ROOT": root, "AVA_CONFIRM": "always"}
	if _, errOut, code := ava(t, env, "run", "--model", "scripted/"+script, "go"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out, _, _ := ava(t, env, "logs", "--type", "SubagentSpawn", "--json"); strings.TrimSpace(out) != "" {
		t.Fatalf("a spawn started without confirmation:\n%s", out)
	}
	if _, errOut, code := ava(t, env, "run", "--yes", "--model", "scripted/"+script, "go"); code != 0 {
		t.Fatalf("--yes: exit %d: %s", code, errOut)
	}
	out, _, _ := ava(t, env, "logs", "--type", "SubagentSpawn", "--json")
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); strings.TrimSpace(out) == "" || n != 1 {
		t.Fatalf("--yes: %d spawns, want 1:\n%s", n, out)
	}
	stats, errOut, code := ava(t, env, "roles", "--stats")
	if code != 0 {
		t.Fatalf("roles --stats: exit %d: %s", code, errOut)
	}
	var line string
	for _, l := range strings.Split(stats, "\n") {
		if strings.HasPrefix(l, "researcher ") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 5 || f[1] != "1" || !strings.Contains(line, "% of 1") {
		t.Fatalf("roles --stats:\n%s", stats)
	}
}

// TestSpawnProposesUnlessYes: `ava spawn --wait` under the default policy
// prints the proposal and starts nothing; --yes runs it.
func TestSpawnProposesUnlessYes(t *testing.T) {
	env := map[string]string{"AVA_CONFIRM": "always"}
	out, errOut, code := ava(t, env, "spawn", "--role", "researcher", "--offline", "--wait", "look around")
	if code != 0 || !strings.Contains(out, "Proceed? [Yes/No]") || !strings.Contains(out, "• Cost: up to $0.50") ||
		!strings.Contains(errOut, "awaits confirmation") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = ava(t, env, "spawn", "--role", "researcher", "--offline", "--wait", "--yes", "look around")
	if code != 0 || !strings.Contains(out, "status: success") {
		t.Fatalf("--yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

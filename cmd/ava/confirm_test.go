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
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: look, rationale: "it needs reading"}}]
      - text: "done"
`

// TestRunYesSkipsConfirmation: under AVA_CONFIRM=always a spawn from
// `ava run` without a terminal becomes a proposal shown on stderr,
// nothing runs and the exit code is 1; the person's "yes" in the same
// session starts it; with --yes a spawn runs
// at once; `ava roles --stats` then counts both.
func TestRunYesSkipsConfirmation(t *testing.T) {
	root := t.TempDir()
	script := filepath.Join(t.TempDir(), "spawn.yaml")
	must(t, os.WriteFile(script, []byte(strings.ReplaceAll(spawnOnceScript, "SCRIPT", script)), 0o600))
	operatorSubagentScript(t, root, script)
	env := map[string]string{"AVA_DATA_ROOT": root, "AVA_CONFIRM": "always"}
	_, errOut, code := ava(t, env, "run", "--session", "ava:cli:asked", "--model", "scripted/"+script, "go")
	if code != 1 || !strings.Contains(errOut, "awaits your confirmation") || !strings.Contains(errOut, "Proceed? [Yes/No]") ||
		!strings.Contains(errOut, "ava confirm P-") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	spawns := func() int {
		out, _, _ := ava(t, env, "logs", "--type", "SubagentSpawn", "--json")
		if strings.TrimSpace(out) == "" {
			return 0
		}
		return len(strings.Split(strings.TrimSpace(out), "\n"))
	}
	if n := spawns(); n != 0 {
		t.Fatalf("%d spawns started without confirmation", n)
	}
	// The person's answer in the same session starts it.
	out, errOut, code := ava(t, env, "run", "--session", "ava:cli:asked", "--model", "scripted/"+script, "yes")
	if code != 0 || !strings.HasPrefix(out, "🚀 Spawning researcher subagent (S-") {
		t.Fatalf("answer: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n := spawns(); n != 1 {
		t.Fatalf("after yes: %d spawns, want 1", n)
	}
	if _, errOut, code := ava(t, env, "run", "--yes", "--model", "scripted/"+script, "go"); code != 0 {
		t.Fatalf("--yes: exit %d: %s", code, errOut)
	}
	if n := spawns(); n != 2 {
		t.Fatalf("--yes: %d spawns, want 2", n)
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
	if f := strings.Fields(line); len(f) < 5 || f[1] != "2" || !strings.Contains(line, "% of 2") {
		t.Fatalf("roles --stats:\n%s", stats)
	}
}

// TestSpawnProposesUnlessYes: `ava spawn --wait` under the default policy
// without a terminal prints the proposal, starts nothing and exits 1
// saying how to answer; --yes runs it.
func TestSpawnProposesUnlessYes(t *testing.T) {
	env := map[string]string{"AVA_CONFIRM": "always"}
	out, errOut, code := ava(t, env, "spawn", "--role", "researcher", "--offline", "--wait", "look around")
	if code != 1 || !strings.Contains(out, "Proceed? [Yes/No]") || !strings.Contains(out, "• Cost: up to 50.0¢") ||
		!strings.Contains(errOut, "awaits your confirmation") || !strings.Contains(errOut, "ava confirm P-") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = ava(t, env, "spawn", "--role", "researcher", "--offline", "--wait", "--yes", "look around")
	if code != 0 || !strings.Contains(out, "status: success") {
		t.Fatalf("--yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

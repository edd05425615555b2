package main_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm/llmfake"
)

// continueHint finds the command line ava run prints to go on with its
// session, as a person would copy it.
var continueHint = regexp.MustCompile(`continue with ava (run[^"]*) "…"`)

// Offline means one thing (issue 42 item 3): every command that runs the
// model here takes --offline and, with no provider, uses the offline model
// by itself and says so; a copied continuation hint runs on the same model.
func TestOfflineIsOneRule(t *testing.T) {
	for _, c := range []string{"serve", "mcp", "run", "chat", "spawn"} {
		out, errOut, code := ava(t, nil, c, "--help")
		if code != 0 || !strings.Contains(out, "--offline") || !strings.Contains(out, "Offline: a command that runs the model in its own process") {
			t.Errorf("ava %s --help: exit %d, no --offline or no offline rule:\n%s%s", c, code, out, errOut)
		}
	}
	if _, errOut, code := ava(t, nil, "mcp", "--offline"); code != 0 || !strings.Contains(errOut, "[offline] --offline") {
		t.Errorf("ava mcp --offline: exit %d: %s", code, errOut)
	}
	// No provider: run falls back by itself, and its hint works when copied.
	env := map[string]string{"AVA_DATA_ROOT": t.TempDir()}
	out, errOut, code := ava(t, env, "run", "hello")
	if code != 0 || !strings.Contains(out, "[offline demo model]") || !strings.Contains(errOut, "[offline] no model provider is configured") ||
		!strings.Contains(errOut, "ANTHROPIC_API_KEY") {
		t.Fatalf("run without a provider: exit %d\n%s\n%s", code, out, errOut)
	}
	rerun(t, env, errOut, false)
	// So does spawn --wait, as spawn does beside an offline daemon.
	if _, errOut, code := ava(t, nil, "spawn", "--role", "researcher", "--wait", "task"); code != 0 || !strings.Contains(errOut, "[offline]") {
		t.Errorf("spawn --wait without a provider: exit %d: %s", code, errOut)
	}
	// Without --wait the daemon's model applies: --offline is a usage error.
	if _, errOut, code := ava(t, nil, "spawn", "--role", "researcher", "--offline", "task"); code != 2 || !strings.Contains(errOut, "ava serve --offline") {
		t.Errorf("spawn --offline without --wait: exit %d: %s", code, errOut)
	}
	// A provider configured and --offline: the hint keeps --offline, and
	// the copied hint never reaches the provider.
	fake := llmfake.NewOpenAI(t)
	env = map[string]string{"AVA_DATA_ROOT": t.TempDir(), "OPENAI_BASE_URL": fake.URL + "/v1", "AVA_MODEL": "openai/llama3.2"}
	out, errOut, code = ava(t, env, "run", "--offline", "hello")
	if code != 0 || !strings.Contains(out, "[offline demo model]") {
		t.Fatalf("run --offline: exit %d\n%s\n%s", code, out, errOut)
	}
	rerun(t, env, errOut, true)
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("the provider got %d requests from --offline runs", n)
	}
}

// rerun runs the continuation hint in errOut as printed, and checks it
// answers offline (and names --offline when wantFlag).
func rerun(t *testing.T, env map[string]string, errOut string, wantFlag bool) {
	t.Helper()
	m := continueHint.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no continuation hint in:\n%s", errOut)
	}
	args := append(strings.Fields(m[1]), "again")
	if got := strings.Contains(m[1], "--offline"); got != wantFlag {
		t.Fatalf("hint %q: --offline %v, want %v", m[1], got, wantFlag)
	}
	out, errOut, code := ava(t, env, args...)
	if code != 0 || !strings.Contains(out, "[offline demo model]") {
		t.Fatalf("copied hint ava %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
	}
}

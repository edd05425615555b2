package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/internal/initgc"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/sqlite"
)

var avaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ava-e2e")
	if err != nil {
		panic(err)
	}
	// AVA_E2E_BIN runs the tests and benchmarks against a binary built
	// elsewhere (another commit's, for a before and after; one a profiler
	// can read the symbols of).
	initgc.Restore() // the test binary links package main's initgc but runs no main
	avaBin = os.Getenv("AVA_E2E_BIN")
	if avaBin != "" {
		if avaBin, err = filepath.Abs(avaBin); err != nil {
			panic(err)
		}
	} else {
		avaBin = filepath.Join(dir, "ava")
		build := exec.Command("go", "build", "-o", avaBin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as docs/getting-started.md installs it
		out, err := build.CombinedOutput()
		if err != nil {
			panic("build ava: " + err.Error() + "\n" + string(out))
		}
	}
	// pgtest stops the PostgreSQL server the cluster and logs tests start.
	code := pgtest.Main(m).Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ava runs the binary with a clean environment plus env.
func ava(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(avaBin, args...)
	// Spawns start at once unless a test sets AVA_CONFIRM (the last
	// value of a variable wins).
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + t.TempDir(), "AVA_WORKSPACE=" + t.TempDir(), "AVA_CONFIRM=never"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns what it printed and its exit code.
func runCmd(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestRunAgainstOpenAICompatibleServer(t *testing.T) {
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Text: "Hello from the fake model.", Usage: llm.Usage{InputTokens: 12, OutputTokens: 6}})
	out, errOut, code := ava(t, map[string]string{"OPENAI_BASE_URL": fake.URL + "/v1", "AVA_MODEL": "openai/llama3.2"}, "run", "hello")
	if code != 0 || strings.TrimSpace(out) != "Hello from the fake model." {
		t.Fatalf("exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Body["model"] != "llama3.2" || reqs[0].Body["stream"] != true {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestRunJSON(t *testing.T) {
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Text: "42", Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100}})
	out, errOut, code := ava(t, map[string]string{"OPENAI_BASE_URL": fake.URL, "AVA_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-test"}, "run", "--json", "answer?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Status     string  `json:"status"`
		Text       string  `json:"text"`
		CostCents  float64 `json:"cost_cents"`
		DurationMs int64   `json:"duration_ms"`
		Iterations int     `json:"iterations"`
		Offline    bool    `json:"offline"`
		Tokens     struct{ Input, Output, Total int }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	// gpt-4o-mini: 15¢ per million input, 60¢ per million output.
	if res.Status != "success" || res.Text != "42" || res.Tokens.Total != 1100 || res.Iterations != 1 || res.Offline ||
		res.CostCents < 0.0209 || res.CostCents > 0.0211 {
		t.Fatalf("%+v", res)
	}
}

func TestRunWithoutProviderExplains(t *testing.T) {
	_, errOut, code := ava(t, nil, "run", "hello")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"no model provider is configured", "offline scripted model", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestRunOfflineIsLabelled(t *testing.T) {
	out, errOut, code := ava(t, nil, "run", "--offline", "hi there")
	if code != 0 || !strings.Contains(out, "[offline demo model]") || !strings.Contains(out, `"hi there"`) || !strings.Contains(errOut, "[offline]") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

func TestRunServerErrorFails(t *testing.T) {
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Status: 400})
	_, errOut, code := ava(t, map[string]string{"OPENAI_BASE_URL": fake.URL, "AVA_MODEL": "openai/x"}, "run", "hello")
	if code != 1 || !strings.Contains(errOut, "status error") || !strings.Contains(errOut, "400") {
		t.Fatalf("exit %d stderr %s", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	_, errOut, code := ava(t, nil, "run")
	if code != 2 || !strings.Contains(errOut, "requires at least 1 arg") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = ava(t, nil, "frobnicate")
	if code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestDataRootIsPrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "fresh")
	_, errOut, code := ava(t, map[string]string{"AVA_DATA_ROOT": root}, "run", "--offline", "hi")
	if code != 0 {
		t.Fatal(errOut)
	}
	st, err := os.Stat(root)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data root mode %v %v", st.Mode(), err)
	}
	for _, p := range []string{"ava.db", "logs/ava"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s missing: %v", p, err)
		}
	}
}

func TestCompletion(t *testing.T) {
	out, _, code := ava(t, nil, "completion", "bash")
	if code != 0 || !strings.Contains(out, "__start_ava") {
		t.Fatalf("exit %d", code)
	}
}

func TestSpawnOffline(t *testing.T) {
	out, errOut, code := ava(t, nil, "spawn", "--role", "researcher", "--offline", "--wait", "--json", "what is WAL?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		SubagentID   string          `json:"subagent_id"`
		Status       string          `json:"status"`
		OutputFormat string          `json:"output_format"`
		Output       json.RawMessage `json:"output"`
		Confidence   float64         `json:"confidence"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Status != "success" || r.OutputFormat != "json" || r.Confidence != 1 || !strings.HasPrefix(r.SubagentID, "S-") {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(errOut, "[offline]") {
		t.Fatalf("offline not labelled: %s", errOut)
	}
}

func TestSpawnRefusals(t *testing.T) {
	// A background spawn goes to the daemon; none listens on this port.
	_, errOut, code := ava(t, map[string]string{"AVA_ADDR": "127.0.0.1:1"}, "spawn", "--role", "researcher", "task")
	if code != 1 || !strings.Contains(errOut, "no Ava daemon is running at http://127.0.0.1:1") || !strings.Contains(errOut, "ava serve") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = ava(t, nil, "spawn", "--role", "astronaut", "--offline", "--wait", "task")
	if code != 1 || !strings.Contains(errOut, `unknown role "astronaut"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = ava(t, nil, "spawn", "--wait", "task")
	if code != 2 || !strings.Contains(errOut, "role") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestRolesListsBuiltinAndCustomAndReportsBadFiles(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "agents"), 0o700)
	os.WriteFile(filepath.Join(root, "agents", "pricing.md"), []byte("---\nname: pricing_analyst\ntools: [web_search]\nmodel: haiku\n---\nbe brief\n"), 0o600)
	os.WriteFile(filepath.Join(root, "agents", "broken.md"), []byte("---\nname: broken\ntools: [teleport]\n---\n"), 0o600)
	out, errOut, code := ava(t, map[string]string{"AVA_DATA_ROOT": root}, "roles")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"web_crawler", "code_reviewer", "data_extractor", "researcher", "pricing_analyst", "built-in", "pricing.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("roles output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "broken.md:3") || !strings.Contains(errOut, `unknown tool "teleport"`) {
		t.Errorf("bad role file not reported with path and line: %s", errOut)
	}
}

func TestRunOfflineDelegatesAndLogs(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"AVA_DATA_ROOT": root}
	_, errOut, code := ava(t, env, "run", "--offline", "hello")
	if code != 0 || !strings.Contains(errOut, "Subagent [Researcher]: Complete") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	traces, _ := filepath.Glob(filepath.Join(root, "logs", "subagents", "S-*.jsonl"))
	sessions, _ := filepath.Glob(filepath.Join(root, "sessions", "*.jsonl"))
	if len(traces) != 1 || len(sessions) != 1 {
		t.Fatalf("traces %v sessions %v", traces, sessions)
	}
	id := strings.TrimSuffix(filepath.Base(traces[0]), ".jsonl")
	out, errOut, code := ava(t, env, "logs", id)
	if code != 0 || !strings.Contains(out, "AssistantMessage") || !strings.Contains(lastLine(out), "SessionEnd") || !strings.Contains(lastLine(out), "status=success") {
		t.Fatalf("logs %s: exit %d\n%s\n%s", id, code, out, errOut)
	}
	out, _, _ = ava(t, env, "logs", "--type", "subagentcomplete", "--json")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"eventType":"SubagentComplete"`) {
		t.Fatalf("logs --type --json: %s", out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// backgroundScript's orchestrator spawns a background subagent and answers
// before it ends, so the subagent's SubagentComplete reaches the session
// after the turn's last event (issue 9: it used to reuse a number).
const backgroundScript = `conversations:
  - match: "specialized researcher subagent"
    turns:
      - text: "late result"
        delay: 300ms
  - turns:
      - text: "delegating"
        tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: "late task", background: true, timeout: 30, max_cost_cents: 1}
      - text: "answered before the subagent ended"
`

// A session's sequence numbers go on across processes: two runs of one
// session, the first leaving a background subagent that ends after its turn,
// number the session 1, 2, 3, … with no number reused or skipped. (The
// script has one delegating turn: the second run answers directly.)
func TestSessionSequenceAcrossProcesses(t *testing.T) {
	root := t.TempDir()
	script := filepath.Join(root, "bg.yaml")
	if err := os.WriteFile(script, []byte(backgroundScript), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AVA_DATA_ROOT": root}
	for i := 0; i < 2; i++ {
		if _, errOut, code := ava(t, env, "run", "--model", "scripted/"+script, "--session", "ava:cli:seq", "hi"); code != 0 {
			t.Fatal(errOut)
		}
	}
	out, errOut, code := ava(t, env, "logs", "--session", "ava:cli:seq", "--json", "--last", "0")
	if code != 0 {
		t.Fatal(errOut)
	}
	// The store's events are numbered 1, 2, 3, …; the audit log holds
	// the audit types among them, in increasing order.
	st, err := sqlite.Open(context.Background(), filepath.Join(root, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored, err := st.ReadEvents(context.Background(), "ava:cli:seq", 0, 0)
	if err != nil || len(stored) == 0 {
		t.Fatalf("stored events: %d %v", len(stored), err)
	}
	for i, ev := range stored {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("stored event %d is #%d", i, ev.Seq)
		}
	}
	seen := map[uint64]bool{}
	var last uint64
	starts, completes := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Seq       uint64 `json:"seq"`
			EventType string `json:"eventType"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Seq <= last {
			t.Fatalf("seq %d after %d (seen before: %v)", ev.Seq, last, seen[ev.Seq])
		}
		seen[ev.Seq], last = true, ev.Seq
		switch ev.EventType {
		case "SessionStart":
			starts++
		case "SubagentComplete":
			completes++
		}
	}
	// Three turns: the first run's, the report Ava makes by itself once
	// its background subagent has ended (which `ava run` waits for), and
	// the second run's.
	if starts != 3 || completes != 1 {
		t.Fatalf("%d session starts and %d subagent completions in %d entries", starts, completes, len(seen))
	}
}

// A session budget covers the orchestrator's own spend: once it is spent,
// the next message in that session is refused.
func TestSessionBudget(t *testing.T) {
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Text: "pricey", Usage: llm.Usage{InputTokens: 1_000_000}})
	env := map[string]string{"AVA_DATA_ROOT": t.TempDir(), "OPENAI_BASE_URL": fake.URL, "AVA_MODEL": "openai/gpt-4o-mini"}
	// 1M input tokens of gpt-4o-mini cost 15¢, over a 10¢ budget: the
	// request was tiny, so the loop could not foresee the fake's count,
	// but a run that ends above its cap is not a success.
	if _, errOut, code := ava(t, env, "run", "--session", "ava:cli:b", "--budget", "10", "hi"); code != 1 || !strings.Contains(errOut, "cost_exceeded") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code := ava(t, env, "run", "--session", "ava:cli:b", "again")
	if code != 1 || !strings.Contains(errOut, "budget is spent") || !strings.Contains(errOut, "15.0¢ of 10.0¢") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(fake.Requests()) != 1 {
		t.Fatalf("%d model requests; the second message must not reach the model", len(fake.Requests()))
	}
}

func TestRunAgainstAnthropicWithThinkingAndTools(t *testing.T) {
	fake := llmfake.NewAnthropic(t,
		llmfake.Turn{Thinking: "I should list the workspace.", ThinkingSignature: "sig-1", Text: "Looking.",
			ToolCalls: []llmfake.ToolCall{{ID: "toolu_1", Name: "search_codebase", Args: `{"pattern":"needle"}`}},
			Usage:     llm.Usage{InputTokens: 100, OutputTokens: 20}},
		llmfake.Turn{Text: "Found it.", Usage: llm.Usage{InputTokens: 150, OutputTokens: 5, CacheReadTokens: 80}})
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hay\nneedle\n"), 0o600)
	root := t.TempDir()
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-secret", "ANTHROPIC_BASE_URL": fake.URL, "AVA_MODEL": "anthropic/haiku",
		"AVA_DATA_ROOT": root, "AVA_WORKSPACE": ws}
	out, errOut, code := ava(t, env, "run", "--json", "find the needle")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Text   string `json:"text"`
		Model  string `json:"model"`
		Tokens struct {
			CacheRead int `json:"cache_read"`
		} `json:"tokens"`
	}
	json.Unmarshal([]byte(out), &res)
	if res.Text != "Found it." || res.Model != "anthropic/claude-haiku-4-5" || res.Tokens.CacheRead != 80 {
		t.Fatalf("%s", out)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	second := string(reqs[1].Raw)
	for _, want := range []string{`"signature":"sig-1"`, `"tool_use_id":"toolu_1"`, `a.txt:2`} {
		if !strings.Contains(second, want) {
			t.Errorf("second request lacks %s", want)
		}
	}
	logs, _, _ := ava(t, env, "logs", "--json", "--last", "0")
	if !strings.Contains(logs, `"eventType":"ExtendedThinking"`) || strings.Contains(logs, "sk-ant-test-secret") {
		t.Fatalf("thinking not logged, or the key leaked:\n%s", logs)
	}
}

// With only a server of your own (OPENAI_BASE_URL) and AVA_MODEL, a
// subagent asks that server for AVA_MODEL's model, not for gpt-5, and
// ava roles shows it.
func TestSubagentUsesConfiguredModelOnOwnServer(t *testing.T) {
	fake := llmfake.NewOpenAI(t, llmfake.Turn{Text: `{"summary":"ok","output":{"a":1},"confidence":0.9}`, Usage: llm.Usage{InputTokens: 5, OutputTokens: 5}})
	env := map[string]string{"AVA_DATA_ROOT": t.TempDir(), "OPENAI_BASE_URL": fake.URL + "/v1", "AVA_MODEL": "openai/llama3.2"}
	_, errOut, code := ava(t, env, "spawn", "--role", "researcher", "--wait", "--json", "what is WAL?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the subagent sent no request")
	}
	if got := reqs[0].Body["model"]; got != "llama3.2" {
		t.Fatalf("the subagent asked for %v, want llama3.2", got)
	}
	out, errOut, code := ava(t, env, "roles")
	if code != 0 || !strings.Contains(out, "sonnet → openai/llama3.2") || !strings.Contains(out, "haiku → openai/llama3.2") || strings.Contains(out, "gpt-5") {
		t.Fatalf("roles: exit %d\n%s\n%s", code, out, errOut)
	}
}

// With no provider, ava roles says the roles run on the offline model, as
// ava spawn --wait then runs them there (the offline rule).
func TestRolesAndSpawnAgreeWithoutProvider(t *testing.T) {
	_, errOut, code := ava(t, nil, "spawn", "--role", "researcher", "--wait", "task")
	if code != 0 || !strings.Contains(errOut, "no model provider is configured") {
		t.Fatalf("spawn: exit %d: %s", code, errOut)
	}
	out, errOut, code := ava(t, nil, "roles")
	if code != 0 || strings.Count(out, "→ scripted/demo (offline)") != 4 || !strings.Contains(errOut, "roles run on the offline scripted model") {
		t.Fatalf("roles: exit %d\n%s\n%s", code, out, errOut)
	}
}

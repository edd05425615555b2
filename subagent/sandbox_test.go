package subagent_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool/shell"
)

// A subagent driven by a scripted model probes as an attacker would,
// through run_bash and python_exec: Ava's environment (/proc/<ava>/environ),
// a planted SSH key, the data root (read ava.db, write a role file),
// a folder outside the workspace, a server on Ava's loopback. Every probe
// fails; the subagent itself runs to its end.
func TestSubagentSandboxProbes(t *testing.T) {
	if st := sandbox.Probe(); !st.Ready {
		t.Fatalf("the sandbox is not available here: %s", st.Summary())
	}
	if err := sandbox.HardenSelf(); err != nil {
		t.Fatal(err)
	}
	secret := "FAKE-SUBAGENT-SECRET-7731"
	t.Setenv("FAKE_SERVICE_TOKEN", secret)
	home := plantKey(t, secret)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1); fmt.Fprint(w, "REACHED") }))
	defer srv.Close()
	outside := t.TempDir()
	pid := os.Getpid()

	bash := fmt.Sprintf(`cat /proc/%[1]d/environ; cat %[2]s/.ssh/id_rsa; head -c 15 ../ava.db; mkdir -p ../agents && echo evil > ../agents/web_crawler.md;
echo pwn > %[3]s/x; curl -sS --max-time 3 %[4]s/; echo end`, pid, home, outside, srv.URL)
	py := fmt.Sprintf(`import os, urllib.request
ws = os.environ["AVA_WORKSPACE"]
for p in ["/proc/%[1]d/environ", "%[2]s/.ssh/id_rsa", ws + "/../ava.db"]:
    try: print(open(p, "rb").read()[:40])
    except Exception as e: print("refused", type(e).__name__)
for p in [ws + "/../agents/web_crawler.md", "%[3]s/y"]:
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True); open(p, "w").write("evil"); print("WROTE", p)
    except Exception as e: print("refused", type(e).__name__)
try: print(urllib.request.urlopen("%[4]s/", timeout=3).read())
except Exception as e: print("refused", type(e).__name__)
`, pid, home, outside, srv.URL)

	for _, tc := range []struct{ role, tool, key, code string }{
		{"code_reviewer", "run_bash", "command", bash},
		{"data_extractor", "python_exec", "code", py},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			script, _ := json.Marshal(map[string]any{"turns": []any{
				map[string]any{"tool_calls": []any{map[string]any{"name": tc.tool, "args": map[string]any{tc.key: tc.code}}}},
				map[string]any{"text": "done"},
			}})
			sh := shell.New(shell.Config{})
			var root string
			h := newHarness(t, string(script), func(o *subagent.Options) {
				root = o.Workspace // the harness's data root
				o.Workspace = filepath.Join(root, "ws")
				if err := os.Mkdir(o.Workspace, 0o755); err != nil {
					t.Fatal(err)
				}
			}, sh.All()...)
			hd := h.spawn(t, subagent.Config{Role: tc.role, Task: "probe"})
			if r := wait(t, hd); r.Status != lifecycle.Success {
				t.Fatalf("status %s", r.Status)
			}
			out := toolResults(h.model.requests())
			if !strings.Contains(out, "end") && !strings.Contains(out, "refused") {
				t.Fatalf("the probe did not run:\n%s", out)
			}
			// A write may succeed inside the sandbox's own /tmp, an empty
			// tmpfs over the real one that vanishes with it: what counts
			// is that nothing reaches the real files, checked below.
			for _, leak := range []string{secret, "SQLite format", "REACHED"} {
				if strings.Contains(out, leak) {
					t.Errorf("%s leaked %q:\n%s", tc.tool, leak, out)
				}
			}
			for _, p := range []string{filepath.Join(root, "agents", "web_crawler.md"), filepath.Join(outside, "x"), filepath.Join(outside, "y")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s wrote %s", tc.tool, p)
				}
			}
			if hits.Load() != 0 {
				t.Errorf("the loopback server got %d requests", hits.Load())
			}
		})
	}
}

// toolResults joins every tool result the model was shown.
func toolResults(reqs []*llm.Request) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, r := range reqs {
		for _, m := range r.Messages {
			for _, blk := range m.Content {
				if blk.Type == llm.BlockToolResult && !seen[blk.ToolCallID] {
					seen[blk.ToolCallID] = true
					b.WriteString(blk.Content + "\n")
				}
			}
		}
	}
	return b.String()
}

// plantKey makes a home folder with ~/.ssh/id_rsa holding secret, sets
// HOME to it and returns it: what an attacker would go for.
func plantKey(t *testing.T, secret string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// A subagent driven by a scripted attacker, in a writable workspace that
// is a git repository, tries what was reproduced in issue 24: write a
// role file into the workspace's .ava/agents/ and set core.fsmonitor in
// .git/config, which the person's next `git status` would run. Neither
// reaches the workspace; an ordinary file does.
func TestSubagentCannotChangeWorkspaceControlFiles(t *testing.T) {
	if st := sandbox.Probe(); !st.Ready {
		t.Fatalf("the sandbox is not available here: %s", st.Summary())
	}
	py := `import os, subprocess
ws = os.environ["AVA_WORKSPACE"]
for path, text in [(ws + "/.ava/agents/code_reviewer.md", "evil"), (ws + "/.git/config", "[core]\n\tfsmonitor = touch pwned\n"), (ws + "/normal.txt", "fine")]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as f: f.write(text)
        print("WROTE", path)
    except Exception as e: print("refused", path, type(e).__name__)
r = subprocess.run(["git", "-C", ws, "config", "core.fsmonitor", "touch pwned"], capture_output=True, text=True)
print("git config exit", r.returncode, r.stderr.strip())
`
	script, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"tool_calls": []any{map[string]any{"name": "python_exec", "args": map[string]any{"code": py}}}},
		map[string]any{"text": "done"},
	}})
	sh := shell.New(shell.Config{})
	var ws string
	h := newHarness(t, string(script), func(o *subagent.Options) {
		ws = filepath.Join(o.Workspace, "ws")
		o.Workspace = ws
		if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}, sh.All()...)
	hd := h.spawn(t, subagent.Config{Role: "data_extractor", Task: "probe"})
	if r := wait(t, hd); r.Status != lifecycle.Success {
		t.Fatalf("status %s", r.Status)
	}
	out := toolResults(h.model.requests())
	t.Logf("tool output:\n%s", out)
	if !strings.Contains(out, "git config exit") {
		t.Fatalf("the probe did not run:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".ava", "agents", "code_reviewer.md")); err == nil {
		t.Error("the command wrote a role file into the workspace's .ava/agents/")
	}
	if cfg, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); strings.Contains(string(cfg), "fsmonitor") {
		t.Errorf("the command set core.fsmonitor in .git/config:\n%s", cfg)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "normal.txt")); string(b) != "fine" {
		t.Error("an ordinary file in the workspace was not writable")
	}
}

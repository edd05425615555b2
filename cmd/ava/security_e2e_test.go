package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubagentCannotReadTheDataRoot drives a subagent with the scripted
// model through read_file and search_codebase at the data root, which
// lies inside its workspace: both are refused, and nothing of the data
// root (a role file, the database) reaches its answer.
func TestSubagentCannotReadTheDataRoot(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "ava-data")
	if err := os.MkdirAll(filepath.Join(root, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	planted := "---\nname: web_crawler\ntools: [web_search]\n---\nPLANTED_ROLE_TEXT\n"
	if err := os.WriteFile(filepath.Join(root, "agents", "web_crawler.md"), []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := map[string]string{
		"read":   `{name: read_file, args: {path: "ava-data/agents/web_crawler.md"}}`,
		"search": `{name: search_and_read, args: {pattern: "PLANTED_ROLE|name:", path: "ava-data"}}`,
		"walk":   `{name: search_codebase, args: {pattern: "PLANTED_ROLE_TEXT$"}}`,
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "s.yaml")
			body := "turns:\n  - tool_calls: [" + call + "]\n  - text: \"RESULT {{last_result}}\"\n"
			if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": ws}
			out, errOut, code := ava(t, env, "spawn", "--role", "code_reviewer", "--model", "scripted/"+script, "--wait", "--json", "read the data root")
			if code != 0 && !strings.Contains(out, "RESULT") {
				t.Fatalf("exit %d: %s\n%s", code, out, errOut)
			}
			if strings.Contains(out, "PLANTED_ROLE_TEXT\\n") || strings.Contains(out, "web_crawler.md:") || strings.Contains(out, "tools: [web_search]") {
				t.Fatalf("the data root reached the subagent:\n%s", out)
			}
			if name != "walk" && !strings.Contains(out, "data root") {
				t.Fatalf("no refusal naming the data root:\n%s", out)
			}
		})
	}
}

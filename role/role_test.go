package role_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/role"
)

// builtinNames are the tools the built-in roles name.
var builtinNames = []string{"web_search", "http_get", "read_webpages", "python_exec", "memory_read", "memory_write",
	"read_file", "search_codebase", "search_and_read", "run_bash"}

// known reports whether a tool name is one the built-in roles name.
func known(n string) bool { return slices.Contains(builtinNames, n) }

func TestCustomRoleFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pricing.md"), []byte(`---
name: pricing_analyst
description: Compares prices.
tools: [web_search, read_webpages]
model: opus
timeout: 5m
max_cost_cents: 120
max_tokens: 50000
max_iterations: 8
extended_thinking: true
network: true
read_only_workspace: true
share: false
---
Always give prices in USD per minute.
`), 0o600)
	roles, errs := role.Load([]string{dir}, known)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r := roles["pricing_analyst"]
	if r.Model != "opus" || r.Limits.Timeout != 5*time.Minute || r.Limits.MaxCostCents != 120 || r.Limits.MaxTokens != 50000 ||
		r.Limits.MaxIterations != 8 || !r.ExtendedThinking || !r.Network || !r.ReadOnlyWorkspace || !r.NoShare || r.Prompt != "Always give prices in USD per minute." || r.Source != filepath.Join(dir, "pricing.md") {
		t.Fatalf("%+v", r)
	}
	if len(roles) != 5 {
		t.Fatalf("built-ins lost: %d roles", len(roles))
	}
	// The built-ins' process tools have no network; the reviewer's
	// workspace is read-only to them.
	for _, b := range role.Builtin() {
		if b.Network || b.ReadOnlyWorkspace != (b.Name == "code_reviewer") || b.NoShare {
			t.Fatalf("built-in %s: network %v, read-only workspace %v", b.Name, b.Network, b.ReadOnlyWorkspace)
		}
	}
}

func TestBadRoleFilesAreRefusedWithPathLineAndReason(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a_noclose.md":  "---\nname: x\ntools: [web_search]\n",
		"b_badyaml.md":  "---\nname: x\ntools: [web_search\n---\n",
		"c_unknown.md":  "---\nname: bad_tool\ndescription: d\ntools: [web_search, teleport]\n---\n",
		"d_range.md":    "---\nname: bad_limit\ntools: [web_search]\nmax_iterations: 100000\n---\n",
		"e_name.md":     "---\nname: Bad Name\ntools: [web_search]\n---\n",
		"f_nofront.md":  "just text\n",
		"g_timeout.md":  "---\nname: slowpoke\ntools: [web_search]\ntimeout: forever\n---\n",
		"h_unknownk.md": "---\nname: typo\ntools: [web_search]\nmodle: opus\n---\n",
		"z_good.md":     "---\nname: fine\ntools: [read_file]\n---\nok\n",
	}
	for n, c := range files {
		os.WriteFile(filepath.Join(dir, n), []byte(c), 0o600)
	}
	roles, errs := role.Load([]string{dir}, known)
	if _, ok := roles["fine"]; !ok {
		t.Fatal("a good role was not loaded next to bad ones")
	}
	want := []string{
		"a_noclose.md:1: front matter is not closed",
		"b_badyaml.md:3: front matter: YAML syntax: did not find expected ',' or ']'",
		"c_unknown.md:4: tools: unknown tool \"teleport\"",
		"d_range.md:4: max_iterations 100000",
		"e_name.md:2: name \"Bad Name\"",
		"f_nofront.md:1: a role file starts with",
		"g_timeout.md:4: timeout \"forever\"",
		"h_unknownk.md:4: front matter: unknown setting `modle` — did you mean `model`?",
	}
	if len(errs) != len(want) {
		t.Fatalf("%d errors: %v", len(errs), errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
		}
	}
	if strings.Contains(errs[7].Error(), "role.roleFile") {
		t.Errorf("a Go type in the error: %v", errs[7])
	}
}

// A tool the manager withholds has a reason, and only such a tool does.
func TestWithheldReason(t *testing.T) {
	for _, name := range []string{"spawn_subagent", "spawn_subagents", "subagent_status", "list_subagents", "cancel_subagent"} {
		if got := role.WithheldReason(name); got != "subagents never spawn or manage subagents" {
			t.Errorf("%s: %q", name, got)
		}
	}
	if got := role.WithheldReason("memory_write"); got != "subagents never write memory" {
		t.Errorf("memory_write: %q", got)
	}
	for _, name := range []string{"memory_read", "web_search", "read_file"} {
		if got := role.WithheldReason(name); got != "" {
			t.Errorf("%s: %q, want no reason", name, got)
		}
	}
}

// Built-in roles resume unless they have process tools; a custom role
// resumes only when its front matter says so.
func TestRoleResume(t *testing.T) {
	want := map[string]bool{"researcher": true, "web_crawler": false, "code_reviewer": false, "data_extractor": false}
	for _, r := range role.Builtin() {
		if r.Resume != want[r.Name] {
			t.Errorf("built-in %s: resume %v", r.Name, r.Resume)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("---\nname: resumer\ntools: [read_file]\nresume: true\n---\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "b.md"), []byte("---\nname: plain\ntools: [read_file]\n---\n"), 0o600)
	roles, errs := role.Load([]string{dir}, known)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !roles["resumer"].Resume || roles["plain"].Resume {
		t.Fatalf("custom roles: resumer %v, plain %v", roles["resumer"].Resume, roles["plain"].Resume)
	}
}

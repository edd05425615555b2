package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rolesFixture is a data root with one custom role listing tools no
// subagent gets and one role file that does not load.
func rolesFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"keeper.md": "---\nname: keeper\ntools: [memory_read, memory_write, spawn_subagent]\nmodel: haiku\n---\nkeep notes\n",
		"broken.md": "---\nname: broken\ntools: [teleport]\n---\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRolesShowsWithheldToolsAndReportsBadFilesOnce(t *testing.T) {
	app, out, errb := newLogsTestApp(rolesFixture(t))
	if code := Main(context.Background(), []string{"roles"}, app); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var keeper string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "keeper ") {
			keeper = line
		}
	}
	for _, want := range []string{"memory_read,", "memory_write (withheld: subagents never write memory)", "spawn_subagent (withheld: subagents never spawn or manage subagents)"} {
		if !strings.Contains(keeper, want) {
			t.Errorf("keeper line lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(keeper, "memory_read (withheld") {
		t.Errorf("memory_read marked withheld: %q", keeper)
	}
	if n := strings.Count(errb.String(), "broken.md"); n != 1 {
		t.Errorf("broken.md reported %d times, want once:\n%s", n, errb.String())
	}
}

// TestRolesShowsEachRolesSearch: with only an Anthropic, OpenAI or
// OpenRouter key, ava roles says the roles with web_search search
// through the provider (OpenAI: unless blocked domains are set, which
// its search cannot apply); with web_search: off, that they have none.
func TestRolesShowsEachRolesSearch(t *testing.T) {
	for _, tc := range []struct {
		key, setting, blocked, want string
	}{
		{"ANTHROPIC_API_KEY", "", "", "web_search of researcher: anthropic's own web search and web fetch, run by the provider (up to 5 searches a model call)"},
		{"ANTHROPIC_API_KEY", "off", "", "web_search of researcher: off (web_search: off)"},
		{"OPENAI_API_KEY", "", "", "web_search of researcher: openai's own web search (Responses API), run by the provider (up to 5 searches a model call)"},
		{"OPENAI_API_KEY", "", "spam.example", "web_search of researcher: none: openai's web search cannot block web.blocked_domains; Ava's web_search is not configured"},
		{"OPENROUTER_API_KEY", "", "", "web_search of researcher: openrouter's web plugin (one search of 5 results per task or follow-up), run by the provider (at most one search a model call)"},
	} {
		root := t.TempDir()
		out, errb := &logsBuffer{}, &logsBuffer{}
		env := map[string]string{"AVA_DATA_ROOT": root, tc.key: "sk-test", "AVA_WEB_SEARCH": tc.setting, "AVA_WEB_BLOCKED_DOMAINS": tc.blocked}
		app := NewApp(strings.NewReader(""), out, errb, func(k string) string { return env[k] })
		if code := Main(context.Background(), []string{"roles"}, app); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), tc.want+"\n") {
			t.Errorf("web_search %q: no %q in:\n%s", tc.setting, tc.want, out.String())
		}
		if strings.Contains(out.String(), "web_search of code_reviewer") {
			t.Errorf("a role without web_search has a search line:\n%s", out.String())
		}
	}
}

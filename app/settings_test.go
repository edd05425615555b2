package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/tool"
)

// TestToolSettingsFromConfigFile sets the web tools and the sandbox in
// config.yaml only (no variable), and checks the instance's tools run
// with them: web_search asks the configured SearXNG, http_get reaches a
// loopback address (web.allow_private), and the process tools run
// unconfined (sandbox: off), as startup and `ava roles` say.
func TestToolSettingsFromConfigFile(t *testing.T) {
	var searched string
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		searched = r.URL.Query().Get("q")
		fmt.Fprint(w, `{"results":[{"title":"Found it","url":"https://example.com/x","content":"from the configured SearXNG"}]}`)
	}))
	defer searx.Close()
	root := t.TempDir()
	file := fmt.Sprintf("sandbox: \"off\"\nweb:\n  searxng_url: %s\n  allow_private: true\n", searx.URL)
	if err := os.WriteFile(filepath.Join(root, config.FileName), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ava := tool.Caller{AgentID: "ava", SessionKey: "ava:cli:t"}
	if res := run(t, in.Tools, "web_search", ava, `{"query":"ava settings"}`); res.IsError || !strings.Contains(res.Output, "Found it") || searched != "ava settings" {
		t.Errorf("web_search with web.searxng_url: %s (server saw %q)", res.Output, searched)
	}
	if res := run(t, in.Tools, "http_get", ava, `{"url":"`+searx.URL+`/search?format=json"}`); res.IsError {
		t.Errorf("http_get of a loopback address with web.allow_private: %s", res.Output)
	}
	if s := in.SandboxSummary(); !strings.Contains(s, "OFF") {
		t.Errorf("SandboxSummary with sandbox: off = %q", s)
	}
	if res := run(t, in.Tools, "run_bash", ava, `{"command":"echo unconfined"}`); res.IsError || !strings.Contains(res.Output, "unconfined") {
		t.Errorf("run_bash with sandbox: off: %s", res.Output)
	}
}

package app_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/tool"
)

// TestSubagentCannotReachTheDataRootThroughFileTools: with the data root
// inside the workspace (and a symlink to it), a subagent's file tools
// neither read nor search it: not its role files, not its database.
func TestSubagentCannotReachTheDataRootThroughFileTools(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "ava-data")
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": ws}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	role := "---\nname: web_crawler\ntools: [web_search]\n---\nDATAROOT_ROLE\n"
	if err := os.WriteFile(filepath.Join(root, "agents", "web_crawler.md"), []byte(role), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	sub := tool.Caller{AgentID: "S-abcdef", SessionKey: "ava:subagent:S-abcdef", Subagent: true, Workspace: ws}
	for _, p := range []string{"ava-data/agents/web_crawler.md", "ava-data/ava.db", "link/agents/web_crawler.md", "ava-data"} {
		res := run(t, in.Tools, "read_file", sub, `{"path":"`+p+`"}`)
		if !res.IsError || strings.Contains(res.Output, "DATAROOT_ROLE") {
			t.Errorf("read_file %s: %+v", p, res)
		}
	}
	for _, p := range []string{"", "ava-data", "link"} {
		res := run(t, in.Tools, "search_and_read", sub, `{"pattern":"DATAROOT_ROLE|SQLite","path":"`+p+`"}`)
		if strings.Contains(res.Output, "web_crawler.md") || strings.Contains(res.Output, "ava.db") {
			t.Errorf("search %q reached the data root: %s", p, res.Output)
		}
	}
}

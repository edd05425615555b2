package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/tool"
)

func TestMain(m *testing.M) {
	if os.Getenv(turnProcessEnv) != "" {
		os.Exit(turnProcess())
	}
	// pgtest stops the PostgreSQL server TestOpenOnPostgres started.
	goleak.VerifyTestMain(pgtest.Main(m))
}

func open(t *testing.T) *app.Instance {
	t.Helper()
	return openAt(t, t.TempDir(), "")
}

// openAt opens an instance on the data root (also its workspace) and,
// when url is set, the PostgreSQL database at url; closed when t ends.
func openAt(t *testing.T, root, url string) *app.Instance {
	t.Helper()
	env := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_CONFIRM": "never"}
	if url != "" {
		env["AVA_DATABASE_URL"] = url
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := in.Close(); err != nil {
			t.Error(err)
		}
	})
	return in
}

func run(t *testing.T, reg *tool.Registry, name string, c tool.Caller, args string) tool.Result {
	t.Helper()
	tl, ok := reg.Get(name)
	if !ok {
		t.Fatalf("no tool %s in %v", name, reg.Names())
	}
	res, err := tl.Run(tool.WithCaller(context.Background(), c), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestOrchestratorToolsAndMemoryOnRealStore(t *testing.T) {
	in := open(t)
	reg, err := in.OrchestratorTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http_get", "list_subagents", "memory_read", "memory_write", "python_exec", "read_ava_logs", "read_file",
		"read_webpages", "run_bash", "search_and_read", "search_codebase", "spawn_subagent", "spawn_subagents",
		"subagent_status", "cancel_subagent", "web_search"}
	for _, n := range want {
		if _, ok := reg.Get(n); !ok {
			t.Errorf("orchestrator lacks %s", n)
		}
	}
	ava := tool.Caller{AgentID: "ava", SessionKey: "ava:cli:t"}
	if res := run(t, reg, "memory_write", ava, `{"content":"Ben prefers metric units","tags":["prefs"]}`); res.IsError {
		t.Fatal(res.Output)
	}
	if res := run(t, reg, "memory_read", ava, `{"query":"units"}`); res.IsError || !strings.Contains(res.Output, "metric units") {
		t.Fatalf("memory_read: %+v", res)
	}
	sub := tool.Caller{AgentID: "S-abcdef", SessionKey: "ava:subagent:S-abcdef", Subagent: true}
	if res := run(t, reg, "memory_write", sub, `{"content":"x"}`); !res.IsError || !strings.Contains(res.Output, "read-only") {
		t.Fatalf("a subagent wrote memory: %+v", res)
	}
	if res := run(t, reg, "spawn_subagent", sub, `{"role":"researcher","task":"x"}`); !res.IsError {
		t.Fatalf("a subagent spawned: %+v", res)
	}
}

func TestNoProviderMeansNoModel(t *testing.T) {
	in := open(t)
	if _, err := app.OrchestratorModel(in.Config, in.Catalog, ""); err != app.ErrNoModel {
		t.Fatalf("err %v", err)
	}
	m, err := app.OrchestratorModel(in.Config, in.Catalog, "scripted/demo")
	if err != nil || !app.IsOffline(m) {
		t.Fatalf("%v %v", m, err)
	}
}

// Subagents' aliases on a server of your own resolve to the model
// AVA_MODEL names there, not to OpenAI's model names.
func TestCustomOpenAIServerAliasesUseConfiguredModel(t *testing.T) {
	cases := []struct {
		name string
		cfg  config.Config
		want string // what "haiku" resolves to; "" for an error
	}{
		{"local server with AVA_MODEL", config.Config{Model: "openai/llama3.2", OpenAI: config.Provider{BaseURL: "http://127.0.0.1:11434/v1"}}, "openai/llama3.2"},
		{"local server, aliases configured", config.Config{Model: "openai/llama3.2", OpenAI: config.Provider{BaseURL: "http://127.0.0.1:11434/v1"},
			Aliases: map[string]map[string]string{"openai": {"haiku": "qwen2.5"}}}, "openai/qwen2.5"},
		{"local server, no model named", config.Config{OpenAI: config.Provider{BaseURL: "http://127.0.0.1:11434/v1"}}, ""},
		{"OpenAI itself", config.Config{Model: "openai/gpt-4o", OpenAI: config.Provider{APIKey: "sk-x"}}, "openai/gpt-5-mini"},
		{"OpenAI by its URL", config.Config{Model: "openai/gpt-4o", OpenAI: config.Provider{APIKey: "sk-x", BaseURL: "https://api.openai.com/v1"}}, "openai/gpt-5-mini"},
	}
	for _, c := range cases {
		cat, err := app.Catalog(c.cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := ""
		m, err := cat.Resolve("haiku")
		if err == nil {
			got = m.Name()
		}
		switch {
		case c.want == "" && (err == nil || !strings.Contains(err.Error(), "no model for the alias haiku")):
			t.Errorf("%s: haiku resolved to %q, %v; want an error", c.name, got, err)
		case c.want != "" && got != c.want:
			t.Errorf("%s: haiku resolved to %q, %v; want %s", c.name, got, err, c.want)
		}
	}
}

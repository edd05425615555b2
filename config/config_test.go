package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPrecedenceDefaultsFileEnv(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, config.FileName), []byte("model: anthropic/haiku\nmax_concurrent_subagents: 5\nconfirm: never\nprices:\n  my-model: {input: 10, output: 20}\n"), 0o600)
	cfg, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root, "AVA_CONFIRM": "above:25", "ANTHROPIC_API_KEY": "sk-ant-x", "AVA_STALL_AFTER": "90s"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "anthropic/haiku" || cfg.MaxConcurrentSubagents != 5 || cfg.Confirm != "above:25" ||
		cfg.Anthropic.APIKey != "sk-ant-x" || cfg.Prices["my-model"].Output != 20 || cfg.StallAfter != 90*time.Second || cfg.Addr != "127.0.0.1:7777" {
		t.Fatalf("config %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSpawnOverflowFromFileAndEnv(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, config.FileName), []byte("spawn_overflow: queue\nmax_queued_subagents: 5\n"), 0o600)
	cfg, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root}))
	if err != nil || cfg.Validate() != nil || cfg.SpawnOverflow != "queue" || cfg.MaxQueuedSubagents != 5 {
		t.Fatalf("file: %+v %v", cfg, err)
	}
	cfg, err = config.Load(env(map[string]string{"AVA_DATA_ROOT": root, "AVA_SPAWN_OVERFLOW": "refuse", "AVA_MAX_QUEUED_SUBAGENTS": "7"}))
	if err != nil || cfg.Validate() != nil || cfg.SpawnOverflow != "refuse" || cfg.MaxQueuedSubagents != 7 {
		t.Fatalf("env over file: %+v %v", cfg, err)
	}
	cfg, err = config.Load(env(map[string]string{"AVA_DATA_ROOT": root, "AVA_RESUME_ATTEMPTS": "0"}))
	if err != nil || cfg.Validate() != nil || cfg.ResumeAttempts != 0 {
		t.Fatalf("AVA_RESUME_ATTEMPTS=0: %+v %v", cfg, err)
	}
	def := config.Default()
	if def.SpawnOverflow != "refuse" || def.MaxQueuedSubagents != 32 || def.ResumeAttempts != 3 {
		t.Fatalf("defaults %+v", def)
	}
}

func TestDefaultDataRoot(t *testing.T) {
	cfg, err := config.Load(env(map[string]string{"XDG_DATA_HOME": "/x/data"}))
	if err != nil || cfg.DataRoot != "/x/data/ava" {
		t.Fatalf("%q %v", cfg.DataRoot, err)
	}
	cfg, err = config.Load(env(map[string]string{"HOME": "/home/u"}))
	if err != nil || cfg.DataRoot != "/home/u/.local/share/ava" {
		t.Fatalf("%q %v", cfg.DataRoot, err)
	}
}

func TestEnsureDataRootIsPrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "ava")
	cfg, _ := config.Load(env(map[string]string{"AVA_DATA_ROOT": root}))
	if err := cfg.EnsureDataRoot(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(root)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v err %v", st.Mode(), err)
	}
}

func TestBadInputNamesTheProblem(t *testing.T) {
	cases := []struct {
		file string
		env  map[string]string
		want string
	}{
		{file: "anthropic:\n  api_key: sk-ant-secret\n", want: "line 2: \"api_key\" is a secret"},
		{file: "ava_token: abc\n", want: "line 1: \"ava_token\" is a secret"},
		{file: "model: openai/x\nANTHROPIC_API_KEY: sk-ant-x\n", want: "line 2: \"ANTHROPIC_API_KEY\" is a secret"},
		{file: "openai:\n  OpenAI_Api_Key: sk-x\n", want: "line 2: \"OpenAI_Api_Key\" is a secret"},
		{file: "telegram_bot_token: 1:x\n", want: "line 1: \"telegram_bot_token\" is a secret"},
		{file: "Password: hunter2\n", want: "line 1: \"Password\" is a secret"},
		{file: "modle: x\n", want: "line 1: unknown setting `modle` — did you mean `model`?"},
		{env: map[string]string{"AVA_MODEL": "bogus"}, want: "model \"bogus\" is not provider/model"},
		{file: "model: bogus\n", want: "providers: anthropic, openai, openrouter, scripted"},
		{file: "max_concurrent_subagents: [1\n", want: "config.yaml"},
		{env: map[string]string{"AVA_MAX_CONCURRENT_SUBAGENTS": "three"}, want: "AVA_MAX_CONCURRENT_SUBAGENTS=\"three\""},
		{env: map[string]string{"AVA_MAX_CONCURRENT_SUBAGENTS": "0"}, want: "max_concurrent_subagents: 0"},
		{env: map[string]string{"AVA_CONFIRM": "sometimes"}, want: "confirm: \"sometimes\""},
		{env: map[string]string{"AVA_CONFIRM": "above:x"}, want: "above:"},
		{env: map[string]string{"AVA_SPAWN_OVERFLOW": "wait"}, want: "spawn_overflow (AVA_SPAWN_OVERFLOW): \"wait\": use refuse"},
		{file: "spawn_overflow: Queue\n", want: "spawn_overflow (AVA_SPAWN_OVERFLOW): \"Queue\""},
		{env: map[string]string{"AVA_MAX_QUEUED_SUBAGENTS": "many"}, want: "AVA_MAX_QUEUED_SUBAGENTS=\"many\""},
		{env: map[string]string{"AVA_MAX_QUEUED_SUBAGENTS": "0"}, want: "max_queued_subagents (AVA_MAX_QUEUED_SUBAGENTS): 0"},
		{env: map[string]string{"AVA_RESUME_ATTEMPTS": "x"}, want: "AVA_RESUME_ATTEMPTS=\"x\""},
		{env: map[string]string{"AVA_RESUME_ATTEMPTS": "-1"}, want: "resume_attempts (AVA_RESUME_ATTEMPTS): -1"},
	}
	for _, c := range cases {
		root := t.TempDir()
		if c.file != "" {
			os.WriteFile(filepath.Join(root, config.FileName), []byte(c.file), 0o600)
		}
		e := map[string]string{"AVA_DATA_ROOT": root}
		for k, v := range c.env {
			e[k] = v
		}
		cfg, err := config.Load(env(e))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v: error %v, want it to contain %q", c.file, c.env, err, c.want)
		}
	}
}

func TestParseConfirm(t *testing.T) {
	p, err := config.ParseConfirm("above:12.5")
	if err != nil || p.AboveCents != 12.5 || p.Always || p.Never {
		t.Fatalf("%+v %v", p, err)
	}
}

// TestUnusableDataRootNamesPathAndCause checks the one-line errors for a
// data root that cannot be made: a file in its place or above it, and (as
// a user other than root) a parent directory without write permission.
func TestUnusableDataRootNamesPathAndCause(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{file, filepath.Join(file, "ava")} {
		cfg := config.Config{DataRoot: root}
		err := cfg.EnsureDataRoot()
		want := "create data root " + root + ": " + file + " is a file, not a directory"
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("EnsureDataRoot(%s) = %v, want %q…", root, err, want)
		}
		// Load, which reads config.yaml inside the data root, says so
		// before it tries.
		_, err = config.Load(env(map[string]string{"AVA_DATA_ROOT": root}))
		if err == nil || !strings.HasPrefix(err.Error(), "data root "+root+": "+file+" is a file, not a directory") {
			t.Errorf("Load with data root %s = %v", root, err)
		}
	}
	if data, _ := os.ReadFile(file); string(data) != "keep me\n" {
		t.Errorf("the file in the way was changed: %q", data)
	}

	if os.Geteuid() == 0 {
		t.Skip("permission bits do not stop root")
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o500); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(locked, "ava")
	err := config.Config{DataRoot: root}.EnsureDataRoot()
	if err == nil || !strings.Contains(err.Error(), "create data root "+root) || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("EnsureDataRoot under a read-only directory = %v", err)
	}
}

// Keys that merely contain a secret word, and model names in prices and
// aliases, are not secrets.
func TestNotSecrets(t *testing.T) {
	root := t.TempDir()
	file := "model: openai/fast\nprices:\n  token-counter-1: {input: 1, output: 2}\naliases:\n  openai: {fast: llama3.2}\n"
	os.WriteFile(filepath.Join(root, config.FileName), []byte(file), 0o600)
	cfg, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root}))
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "openai/fast" || cfg.Aliases["openai"]["fast"] != "llama3.2" {
		t.Fatalf("config %+v", cfg)
	}
	for _, m := range []string{"sonnet", "fast"} {
		cfg.Model = m
		if err := cfg.Validate(); err != nil {
			t.Errorf("model %q: %v", m, err)
		}
	}
}

func TestDatabaseURL(t *testing.T) {
	root := t.TempDir()
	const url = "postgres://ava:pg-pass-0123456789@db.internal:5432/ava?sslmode=require"
	cfg, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root, "AVA_DATABASE_URL": url}))
	if err != nil || cfg.Validate() != nil || cfg.DatabaseURL != url {
		t.Fatalf("AVA_DATABASE_URL: %+v %v", cfg.DatabaseURL, err)
	}
	secrets := strings.Join(cfg.Secrets(), "\n")
	if !strings.Contains(secrets, url) || !strings.Contains(secrets, "\npg-pass-0123456789") {
		t.Fatalf("Secrets() = %q, want the URL and its password", secrets)
	}
	cfg, err = config.Load(env(map[string]string{"AVA_DATA_ROOT": root, "AVA_DATABASE_URL": "mysql://db/ava"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "AVA_DATABASE_URL") {
		t.Fatalf("Validate of a mysql URL: %v", err)
	}
	os.WriteFile(filepath.Join(root, config.FileName), []byte("database_url: postgres://x\n"), 0o600)
	if cfg, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root})); err == nil && cfg.DatabaseURL != "" {
		t.Fatalf("config file set DatabaseURL %q", cfg.DatabaseURL)
	}
	for s, want := range map[string]bool{
		"postgres://u:p@db/ava": true, "postgresql://db/ava": true, "POSTGRES://db": true,
		"": false, "/var/lib/ava/ava.db": false, "sqlite://x": false, "mysql://db": false,
	} {
		if got := config.IsPostgresURL(s); got != want {
			t.Errorf("IsPostgresURL(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestWebSearchValidate: web_search names a known choice, a backend it
// names is configured, and only one of the domain lists is set.
func TestWebSearchValidate(t *testing.T) {
	base := config.Default()
	base.DataRoot = t.TempDir()
	for _, tc := range []struct {
		name string
		edit func(c *config.Config)
		want string
	}{
		{"auto", func(c *config.Config) {}, ""},
		{"off", func(c *config.Config) { c.WebSearch = "off" }, ""},
		{"unknown", func(c *config.Config) { c.WebSearch = "google" }, `web_search (AVA_WEB_SEARCH): "google", use auto`},
		{"searxng unset", func(c *config.Config) { c.WebSearch = "searxng" }, "AVA_SEARXNG_URL"},
		{"searxng set", func(c *config.Config) { c.WebSearch = "searxng"; c.Web.SearXNGURL = "http://127.0.0.1:1" }, ""},
		{"both lists", func(c *config.Config) {
			c.Web.AllowedDomains, c.Web.BlockedDomains = []string{"a.example"}, []string{"b.example"}
		}, "set one or the other"},
	} {
		c := base
		tc.edit(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

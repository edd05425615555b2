package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/config"
)

// settingCase is one setting as config.yaml gives it and as its
// variable does, and the value each gives.
type settingCase struct {
	file, env         string // the YAML value; the variable's value
	fromFile, fromEnv any
	get               func(config.Config) any
}

// settingCases covers every setting of config.Settings but the secrets.
var settingCases = map[string]settingCase{
	"AVA_ADDR":                     {"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:1", "127.0.0.1:2", func(c config.Config) any { return c.Addr }},
	"AVA_MODEL":                    {"anthropic/haiku", "openai/gpt-x", "anthropic/haiku", "openai/gpt-x", func(c config.Config) any { return c.Model }},
	"AVA_MAX_CONCURRENT_SUBAGENTS": {"5", "7", 5, 7, func(c config.Config) any { return c.MaxConcurrentSubagents }},
	"AVA_SPAWN_OVERFLOW":           {"queue", "refuse", "queue", "refuse", func(c config.Config) any { return c.SpawnOverflow }},
	"AVA_MAX_QUEUED_SUBAGENTS":     {"4", "9", 4, 9, func(c config.Config) any { return c.MaxQueuedSubagents }},
	"AVA_CONFIRM":                  {"never", "above:25", "never", "above:25", func(c config.Config) any { return c.Confirm }},
	"AVA_CONFIRM_TIMEOUT":          {"5m", "90s", 5 * time.Minute, 90 * time.Second, func(c config.Config) any { return c.ConfirmTimeout }},
	"AVA_CONFIRM_PROCESSES_AFTER":  {"2m", "30s", 2 * time.Minute, 30 * time.Second, func(c config.Config) any { return c.ConfirmProcessesAfter }},
	"AVA_WORKSPACE":                {"/srv/a", "/srv/b", "/srv/a", "/srv/b", func(c config.Config) any { return c.Workspace }},
	"AVA_STALL_AFTER":              {"3m", "4m", 3 * time.Minute, 4 * time.Minute, func(c config.Config) any { return c.StallAfter }},
	"AVA_PROGRESS_AFTER":           {"10s", "20s", 10 * time.Second, 20 * time.Second, func(c config.Config) any { return c.ProgressAfter }},
	"AVA_PROGRESS_EVERY":           {"2m", "3m", 2 * time.Minute, 3 * time.Minute, func(c config.Config) any { return c.ProgressEvery }},
	"AVA_MERGE_WINDOW":             {"5s", "0s", 5 * time.Second, time.Duration(0), func(c config.Config) any { return c.MergeWindow }},
	"AVA_ATTACH_MAX_BYTES":         {"2048", "4096", 2048, 4096, func(c config.Config) any { return c.AttachMaxBytes }},
	"AVA_ATTACH_MAX_FILES":         {"3", "4", 3, 4, func(c config.Config) any { return c.AttachMaxFiles }},
	"AVA_WRAP_UP_AT":               {"0.5", "0.9", 0.5, 0.9, func(c config.Config) any { return c.WrapUpAt }},
	"AVA_ASK_TIMEOUT":              {"1m", "2m", time.Minute, 2 * time.Minute, func(c config.Config) any { return c.AskTimeout }},
	"AVA_ON_COMPLETE":              {"announce", "quiet", config.Announce, config.Quiet, func(c config.Config) any { return c.OnComplete }},
	"AVA_ASK_ANSWERS":              {"orchestrator", "person", "orchestrator", "person", func(c config.Config) any { return c.AskAnswers }},
	"AVA_RESUME_ATTEMPTS":          {"1", "0", 1, 0, func(c config.Config) any { return c.ResumeAttempts }},
	"AVA_SHUTDOWN_GRACE":           {"45s", "1s", 45 * time.Second, time.Second, func(c config.Config) any { return c.ShutdownGrace }},
	"ANTHROPIC_BASE_URL":           {"http://a.test", "http://b.test", "http://a.test", "http://b.test", func(c config.Config) any { return c.Anthropic.BaseURL }},
	"OPENAI_BASE_URL":              {"http://a.test", "http://b.test", "http://a.test", "http://b.test", func(c config.Config) any { return c.OpenAI.BaseURL }},
	"OPENROUTER_BASE_URL":          {"http://a.test", "http://b.test", "http://a.test", "http://b.test", func(c config.Config) any { return c.OpenRouter.BaseURL }},
	"AVA_TELEGRAM_ALLOWED":         {"[1, 2]", "3,4", []string{"1", "2"}, []string{"3", "4"}, func(c config.Config) any { return c.TelegramAllowed }},
	"AVA_TELEGRAM_API_URL":         {"http://a.test", "http://b.test", "http://a.test", "http://b.test", func(c config.Config) any { return c.TelegramAPIURL }},
	"AVA_ROLE":                     {"gateway", "worker", "gateway", "worker", func(c config.Config) any { return c.Role }},
	"AVA_RECOVER_EVERY":            {"5s", "1s", 5 * time.Second, time.Second, func(c config.Config) any { return c.RecoverEvery }},
	"AVA_API_TIMEOUT":              {"20s", "5s", 20 * time.Second, 5 * time.Second, func(c config.Config) any { return c.APITimeout }},
	"AVA_LEASE_TTL":                {"20s", "40s", 20 * time.Second, 40 * time.Second, func(c config.Config) any { return c.LeaseTTL }},
	"AVA_TRUSTED_WORKSPACES": {"[{path: /w/a}]", "/w/b", []string{"/w/a"}, []string{"/w/a", "/w/b"}, func(c config.Config) any {
		var out []string
		for _, w := range c.TrustedWorkspaces {
			out = append(out, w.Path)
		}
		return out
	}},
	"AVA_SEARXNG_URL":       {"http://searx.a", "http://searx.b", "http://searx.a", "http://searx.b", func(c config.Config) any { return c.Web.SearXNGURL }},
	"AVA_BRAVE_BASE_URL":    {"http://brave.a", "http://brave.b", "http://brave.a", "http://brave.b", func(c config.Config) any { return c.Web.BraveBaseURL }},
	"AVA_TAVILY_BASE_URL":   {"http://tavily.a", "http://tavily.b", "http://tavily.a", "http://tavily.b", func(c config.Config) any { return c.Web.TavilyBaseURL }},
	"AVA_WEB_ALLOW_PRIVATE": {"true", "0", true, false, func(c config.Config) any { return c.Web.AllowPrivate }},
	"AVA_OPENAI_KIND":       {"compatible", "openai", "compatible", "openai", func(c config.Config) any { return c.OpenAIKind }},
	"AVA_WEB_SEARCH":        {"off", "provider", "off", "provider", func(c config.Config) any { return c.WebSearch }},
	"AVA_WEB_ALLOWED_DOMAINS": {"[a.example]", "b.example, c.example", []string{"a.example"}, []string{"b.example", "c.example"},
		func(c config.Config) any { return c.Web.AllowedDomains }},
	"AVA_WEB_BLOCKED_DOMAINS": {"[a.example]", "b.example", []string{"a.example"}, []string{"b.example"},
		func(c config.Config) any { return c.Web.BlockedDomains }},
	"AVA_SANDBOX":      {"off", "on", "off", "on", func(c config.Config) any { return c.Sandbox }},
	"AVA_EGRESS_ALLOW": {"[pypi.org]", "example.com, docs.python.org", []string{"pypi.org"}, []string{"example.com", "docs.python.org"}, func(c config.Config) any { return c.EgressAllow }},
}

// yamlAt writes value at a dotted key ("web.searxng_url").
func yamlAt(key, value string) string {
	parent, child, nested := strings.Cut(key, ".")
	if !nested {
		return fmt.Sprintf("%s: %s\n", key, value)
	}
	return fmt.Sprintf("%s:\n  %s: %s\n", parent, child, value)
}

// TestEverySettingFromFileThenEnv sets each setting in config.yaml, then
// also through its variable, which wins; both validate.
func TestEverySettingFromFileThenEnv(t *testing.T) {
	for _, s := range config.Settings() {
		if s.Secret() {
			continue
		}
		c, ok := settingCases[s.Env]
		if !ok {
			t.Errorf("%s (%s): no case; add one to settingCases", s.Env, s.Key)
			continue
		}
		t.Run(s.Env, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, config.FileName), []byte(yamlAt(s.Key, c.file)), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				env  map[string]string
				want any
			}{{map[string]string{"AVA_DATA_ROOT": root}, c.fromFile}, {map[string]string{"AVA_DATA_ROOT": root, s.Env: c.env}, c.fromEnv}} {
				cfg, err := config.Load(env(step.env))
				if err == nil {
					err = cfg.Validate()
				}
				if err != nil {
					t.Fatalf("%s: %v", s.Key, err)
				}
				if diff := cmp.Diff(step.want, c.get(cfg)); diff != "" {
					t.Errorf("%s with %v (-want +got):\n%s", s.Key, step.env, diff)
				}
			}
		})
	}
}

// TestSecretsOnlyFromEnv: each secret setting comes from its variable,
// is among Secrets, and a config file naming it is refused.
func TestSecretsOnlyFromEnv(t *testing.T) {
	want := []string{"AVA_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "TELEGRAM_BOT_TOKEN",
		"AVA_TELEGRAM_WEBHOOK_SECRET", "AVA_DATABASE_URL", "BRAVE_API_KEY", "TAVILY_API_KEY"}
	if diff := cmp.Diff(want, config.SecretEnv()); diff != "" {
		t.Errorf("SecretEnv (-want +got):\n%s", diff)
	}
	for _, name := range config.SecretEnv() {
		root := t.TempDir()
		value := "postgres://u:pw-" + strings.ToLower(name) + "@db/ava"
		cfg, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root, name: value}))
		if err != nil || !slices.Contains(cfg.Secrets(), value) {
			t.Errorf("%s: Secrets() = %q, %v; want it to hold %q", name, cfg.Secrets(), err, value)
		}
		os.WriteFile(filepath.Join(root, config.FileName), []byte(name+": x\n"), 0o600)
		if _, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root})); err == nil || !strings.Contains(err.Error(), "is a secret") {
			t.Errorf("%s in config.yaml: %v, want it refused as a secret", name, err)
		}
	}
}

// TestProcessSettingsValidated: the new settings' bad values name their
// key and variable.
func TestProcessSettingsValidated(t *testing.T) {
	for file, want := range map[string]string{
		"shutdown_grace: 0s\n":   "shutdown_grace (AVA_SHUTDOWN_GRACE)",
		"lease_ttl: 10ms\n":      "lease_ttl (AVA_LEASE_TTL)",
		"recover_every: -1s\n":   "recover_every (AVA_RECOVER_EVERY)",
		"sandbox: maybe\n":       "sandbox (AVA_SANDBOX)",
		"role: boss\n":           "role (AVA_ROLE)",
		"web:\n  bogus: true\n":  "line 2: unknown setting `bogus` (known here: searxng_url,",
		"web:\n  api_key: x\n":   "is a secret",
		"egress_allow: pypi\n":   "line 1: `egress_allow` is a list, not a single value: write egress_allow: [\"pypi\"]",
		"shutdown_grace: soon\n": "line 1: `shutdown_grace` is a duration such as 30s, 5m or 1h30m, not `soon`",
	} {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, config.FileName), []byte(file), 0o600)
		cfg, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root}))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want it to name %q", file, err, want)
		}
	}
	for name, value := range map[string]string{"AVA_SHUTDOWN_GRACE": "soon", "AVA_WEB_ALLOW_PRIVATE": "maybe", "AVA_LEASE_TTL": "x"} {
		_, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": t.TempDir(), name: value}))
		if err == nil || !strings.Contains(err.Error(), name+"=") {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
}

package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Setting is one setting the environment can give: its variable, its
// key in config.yaml (dotted for a nested one, as web.searxng_url) and
// how a value is applied. A secret has no key: only the environment
// gives it, and a config file holding one is refused.
type Setting struct {
	// Env is the environment variable.
	Env string
	// Key is the config.yaml key; empty for a secret.
	Key string
	// apply sets the value (as the environment gives it) on a Config.
	apply func(c *Config, v string) error
	// secret is the field of a secret setting, nil for any other.
	secret func(c *Config) *string
}

// Secret reports whether the setting is a secret (environment only,
// masked by the redactor).
func (s Setting) Secret() bool { return s.secret != nil }

// settings are every setting but AVA_DATA_ROOT (which says where the
// config file is), in the order the environment applies them. It is the
// one list of Ava's settings and of its secret variables.
var settings = []Setting{
	text("AVA_ADDR", "addr", func(c *Config) *string { return &c.Addr }),
	secret("AVA_TOKEN", func(c *Config) *string { return &c.Token }),
	text("AVA_MODEL", "model", func(c *Config) *string { return &c.Model }),
	whole("AVA_MAX_CONCURRENT_SUBAGENTS", "max_concurrent_subagents", func(c *Config) *int { return &c.MaxConcurrentSubagents }),
	text("AVA_SPAWN_OVERFLOW", "spawn_overflow", func(c *Config) *string { return &c.SpawnOverflow }),
	whole("AVA_MAX_QUEUED_SUBAGENTS", "max_queued_subagents", func(c *Config) *int { return &c.MaxQueuedSubagents }),
	text("AVA_CONFIRM", "confirm", func(c *Config) *string { return &c.Confirm }),
	duration("AVA_CONFIRM_TIMEOUT", "confirm_timeout", func(c *Config) *time.Duration { return &c.ConfirmTimeout }),
	text("AVA_WORKSPACE", "workspace", func(c *Config) *string { return &c.Workspace }),
	duration("AVA_STALL_AFTER", "stall_after", func(c *Config) *time.Duration { return &c.StallAfter }),
	duration("AVA_PROGRESS_AFTER", "progress_after", func(c *Config) *time.Duration { return &c.ProgressAfter }),
	duration("AVA_PROGRESS_EVERY", "progress_every", func(c *Config) *time.Duration { return &c.ProgressEvery }),
	duration("AVA_MERGE_WINDOW", "merge_window", func(c *Config) *time.Duration { return &c.MergeWindow }),
	number("AVA_WRAP_UP_AT", "wrap_up_at", func(c *Config) *float64 { return &c.WrapUpAt }),
	duration("AVA_ASK_TIMEOUT", "ask_timeout", func(c *Config) *time.Duration { return &c.AskTimeout }),
	text("AVA_ASK_ANSWERS", "ask_answers", func(c *Config) *string { return &c.AskAnswers }),
	whole("AVA_RESUME_ATTEMPTS", "resume_attempts", func(c *Config) *int { return &c.ResumeAttempts }),
	duration("AVA_SHUTDOWN_GRACE", "shutdown_grace", func(c *Config) *time.Duration { return &c.ShutdownGrace }),

	secret("ANTHROPIC_API_KEY", func(c *Config) *string { return &c.Anthropic.APIKey }),
	text("ANTHROPIC_BASE_URL", "anthropic.base_url", func(c *Config) *string { return &c.Anthropic.BaseURL }),
	secret("OPENAI_API_KEY", func(c *Config) *string { return &c.OpenAI.APIKey }),
	text("OPENAI_BASE_URL", "openai.base_url", func(c *Config) *string { return &c.OpenAI.BaseURL }),
	secret("OPENROUTER_API_KEY", func(c *Config) *string { return &c.OpenRouter.APIKey }),
	text("OPENROUTER_BASE_URL", "openrouter.base_url", func(c *Config) *string { return &c.OpenRouter.BaseURL }),

	secret("TELEGRAM_BOT_TOKEN", func(c *Config) *string { return &c.TelegramBotToken }),
	list("AVA_TELEGRAM_ALLOWED", "telegram_allowed", func(c *Config) *[]string { return &c.TelegramAllowed }),
	text("AVA_TELEGRAM_API_URL", "telegram_api_url", func(c *Config) *string { return &c.TelegramAPIURL }),
	secret("AVA_TELEGRAM_WEBHOOK_SECRET", func(c *Config) *string { return &c.TelegramWebhookSecret }),

	secret("AVA_DATABASE_URL", func(c *Config) *string { return &c.DatabaseURL }),
	text("AVA_ROLE", "role", func(c *Config) *string { return &c.Role }),
	duration("AVA_RECOVER_EVERY", "recover_every", func(c *Config) *time.Duration { return &c.RecoverEvery }),
	duration("AVA_LEASE_TTL", "lease_ttl", func(c *Config) *time.Duration { return &c.LeaseTTL }),
	{Env: "AVA_TRUSTED_WORKSPACES", Key: "trusted_workspaces", apply: addTrustedWorkspaces},

	text("AVA_SEARXNG_URL", "web.searxng_url", func(c *Config) *string { return &c.Web.SearXNGURL }),
	secret("BRAVE_API_KEY", func(c *Config) *string { return &c.Web.BraveAPIKey }),
	text("AVA_BRAVE_BASE_URL", "web.brave_base_url", func(c *Config) *string { return &c.Web.BraveBaseURL }),
	secret("TAVILY_API_KEY", func(c *Config) *string { return &c.Web.TavilyAPIKey }),
	text("AVA_TAVILY_BASE_URL", "web.tavily_base_url", func(c *Config) *string { return &c.Web.TavilyBaseURL }),
	boolean("AVA_WEB_ALLOW_PRIVATE", "web.allow_private", func(c *Config) *bool { return &c.Web.AllowPrivate }),
	text("AVA_SANDBOX", "sandbox", func(c *Config) *string { return &c.Sandbox }),
	list("AVA_EGRESS_ALLOW", "egress_allow", func(c *Config) *[]string { return &c.EgressAllow }),
}

// Settings returns every setting the environment can give (all but
// AVA_DATA_ROOT), each with its config.yaml key.
func Settings() []Setting {
	out := make([]Setting, len(settings))
	copy(out, settings)
	return out
}

// SecretEnv returns the names of Ava's secret variables: the settings
// only the environment gives, which the redactor masks.
func SecretEnv() []string {
	var out []string
	for _, s := range settings {
		if s.Secret() {
			out = append(out, s.Env)
		}
	}
	return out
}

// applyEnv overrides the file's values with the environment's: a
// variable that is set (not empty) wins.
func (c *Config) applyEnv(getenv func(string) string) error {
	for _, s := range settings {
		v := strings.TrimSpace(getenv(s.Env))
		if v == "" {
			continue
		}
		if err := s.apply(c, v); err != nil {
			return fmt.Errorf("%s=%q: %w", s.Env, v, err)
		}
	}
	return nil
}

// text is a setting of a string.
func text(env, key string, field func(*Config) *string) Setting {
	return Setting{Env: env, Key: key, apply: func(c *Config, v string) error { *field(c) = v; return nil }}
}

// secret is a secret string: environment only.
func secret(env string, field func(*Config) *string) Setting {
	s := text(env, "", field)
	s.secret = field
	return s
}

// whole is a setting of a whole number.
func whole(env, key string, field func(*Config) *int) Setting {
	return Setting{Env: env, Key: key, apply: func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not a whole number")
		}
		*field(c) = n
		return nil
	}}
}

// number is a setting of a number.
func number(env, key string, field func(*Config) *float64) Setting {
	return Setting{Env: env, Key: key, apply: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("not a number like 0.8")
		}
		*field(c) = f
		return nil
	}}
}

// duration is a setting of a duration.
func duration(env, key string, field func(*Config) *time.Duration) Setting {
	return Setting{Env: env, Key: key, apply: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("not a duration like 30s or 2m")
		}
		*field(c) = d
		return nil
	}}
}

// boolean is a setting of true or false (also 1/0, yes/no, on/off).
func boolean(env, key string, field func(*Config) *bool) Setting {
	return Setting{Env: env, Key: key, apply: func(c *Config, v string) error {
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			*field(c) = true
		case "0", "false", "no", "off":
			*field(c) = false
		default:
			return errors.New("use true or false")
		}
		return nil
	}}
}

// list is a setting of a list, comma-separated in the environment.
func list(env, key string, field func(*Config) *[]string) Setting {
	return Setting{Env: env, Key: key, apply: func(c *Config, v string) error {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*field(c) = out
		return nil
	}}
}

// addTrustedWorkspaces adds AVA_TRUSTED_WORKSPACES' paths (separated by
// the OS path list separator) to the file's, without contents.
func addTrustedWorkspaces(c *Config, v string) error {
	for _, p := range filepath.SplitList(v) {
		c.TrustedWorkspaces = append(c.TrustedWorkspaces, TrustedWorkspace{Path: p})
	}
	return nil
}

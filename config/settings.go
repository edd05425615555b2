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
// key in config.yaml (dotted for a nested one, as web.searxng_url), how
// a value is applied, and what docs/configuration.md says of it. A
// secret has no key: only the environment gives it, and a config file
// holding one is refused.
type Setting struct {
	// Env is the environment variable.
	Env string
	// Key is the config.yaml key; empty for a secret.
	Key string
	// Default describes the default where Default() leaves the field
	// empty (another package applies it, or it depends on the machine);
	// empty where Default() sets it, which DefaultText then shows.
	Default string
	// Meaning says what the setting does (Markdown, one paragraph).
	Meaning string
	// apply sets the value (as the environment gives it) on a Config.
	apply func(c *Config, v string) error
	// value formats the setting's value in a Config ("" when unset).
	value func(c Config) string
	// secret is the field of a secret setting, nil for any other.
	secret func(c *Config) *string
	// reload is set when a running daemon applies a change of the
	// setting in config.yaml without a restart (Reloads).
	reload bool
}

// reloads returns s marked as applied by a running daemon on reload.
func (s Setting) reloads() Setting {
	s.reload = true
	return s
}

// Reloads reports whether a running daemon applies a change of the
// setting in config.yaml without a restart (`ava reload`, SIGHUP, or the
// file changing); any other setting's change is reported as needing one.
func (s Setting) Reloads() bool { return s.reload }

// DefaultText is the setting's default as docs/configuration.md shows
// it: the value Default() gives, else the Default description.
func (s Setting) DefaultText() string {
	if s.value != nil {
		if v := s.value(Default()); v != "" {
			return "`" + v + "`"
		}
	}
	return s.Default
}

// doc returns s with its documentation: def describes a default
// Default() does not set ("" when it does), meaning what it does.
func (s Setting) doc(def, meaning string) Setting {
	s.Default, s.Meaning = def, meaning
	return s
}

// Secret reports whether the setting is a secret (environment only,
// masked by the redactor).
func (s Setting) Secret() bool { return s.secret != nil }

// settings are every setting but AVA_DATA_ROOT (which says where the
// config file is), in the order the environment applies them. It is the
// one list of Ava's settings and of its secret variables.
var settings = []Setting{
	text("AVA_ADDR", "addr", func(c *Config) *string { return &c.Addr }).doc("",
		"the daemon's address (`ava serve --addr`), and where `ava ps`, `status`, `stop`, `send` find it"),
	secret("AVA_TOKEN", func(c *Config) *string { return &c.Token }).doc("none: the daemon creates `daemon.token` in the data root",
		"the daemon's bearer token; required to bind a non-loopback address; sent by the command-line clients (see [security.md](security.md#the-daemons-authentication))"),
	text("AVA_MODEL", "model", func(c *Config) *string { return &c.Model }).doc("the default provider's `sonnet`",
		"the orchestrator's model, `provider/model` or an alias (see [models.md](models.md))"),
	whole("AVA_MAX_CONCURRENT_SUBAGENTS", "max_concurrent_subagents", func(c *Config) *int { return &c.MaxConcurrentSubagents }).doc("",
		"running subagents at once; beyond it a single spawn is refused, naming the limit, or waits (see `AVA_SPAWN_OVERFLOW`); a group's extra tasks wait for slots").reloads(),
	text("AVA_SPAWN_OVERFLOW", "spawn_overflow", func(c *Config) *string { return &c.SpawnOverflow }).doc("",
		"a single spawn (or follow-up) that finds every slot taken: `refuse` it, or `queue` it until a slot frees; any other value is an error").reloads(),
	whole("AVA_MAX_QUEUED_SUBAGENTS", "max_queued_subagents", func(c *Config) *int { return &c.MaxQueuedSubagents }).doc("",
		"runs waiting for a slot at once; a spawn beyond it is refused, naming the limit (at least 1)").reloads(),
	text("AVA_CONFIRM", "confirm", func(c *Config) *string { return &c.Confirm }).doc("",
		"spawn confirmation policy: `always` (every spawn is a proposal first), `never`, or `above:<cents>` (only when the estimated maximum cost is above it); `ava run --yes` and `ava spawn --yes` mean `never` for that command (see [concepts.md](concepts.md#confirmation-before-spawning))").reloads(),
	duration("AVA_CONFIRM_TIMEOUT", "confirm_timeout", func(c *Config) *time.Duration { return &c.ConfirmTimeout }).doc("",
		"how long a proposal waits for the person's answer before it expires (and the orchestrator is told)").reloads(),
	duration("AVA_CONFIRM_PROCESSES_AFTER", "confirm_processes_after", func(c *Config) *time.Duration { return &c.ConfirmProcessesAfter }).doc("",
		"when the confirmation policy asks (`always`, `above:<cents>`), an orchestrator's `run_bash` or `python_exec` call that declares a timeout of at least this, or is estimated to run this long (`sleep N`, package installs, builds), is a proposal the person answers first (see [concepts.md](concepts.md#long-running-processes-ask-too))"),
	text("AVA_WORKSPACE", "workspace", func(c *Config) *string { return &c.Workspace }).doc("the current directory",
		"where file and shell tools work (`--workspace`)"),
	duration("AVA_STALL_AFTER", "stall_after", func(c *Config) *time.Duration { return &c.StallAfter }).doc("",
		"a subagent with no model output and no tool progress this long is flagged `stalled` (not killed)"),
	duration("AVA_PROGRESS_AFTER", "progress_after", func(c *Config) *time.Duration { return &c.ProgressAfter }).doc("",
		"after how long a running subagent's parent is told how it is doing (\"⏳ Subagent [Role] still working: … (45s, 12k tokens)\"); every channel shows it"),
	duration("AVA_PROGRESS_EVERY", "progress_every", func(c *Config) *time.Duration { return &c.ProgressEvery }).doc("",
		"how often, after `AVA_PROGRESS_AFTER`, a running subagent's parent is told again how it is doing"),
	duration("AVA_MERGE_WINDOW", "merge_window", func(c *Config) *time.Duration { return &c.MergeWindow }).doc("",
		"a person's message to a main session (panel, API, Telegram, `ava chat`) within this long of the running request's start cancels it (and the subagents it started) and both are answered as one; later, the message is refused as busy (409) or queued; 0 turns it off"),
	whole("AVA_ATTACH_MAX_BYTES", "attach_max_bytes", func(c *Config) *int { return &c.AttachMaxBytes }).doc("",
		"the largest file a person may attach to a message (panel, `POST /api/attachments`); a larger one is refused, naming the limit (see [api.md](api.md#attachments))"),
	whole("AVA_ATTACH_MAX_FILES", "attach_max_files", func(c *Config) *int { return &c.AttachMaxFiles }).doc("",
		"how many files one message may carry (and one upload may hold); more are refused, naming the limit"),
	number("AVA_WRAP_UP_AT", "wrap_up_at", func(c *Config) *float64 { return &c.WrapUpAt }).doc("",
		"the share of any of a subagent's limits at which its next model call asks it to finish with what it has; 0: never"),
	duration("AVA_ASK_TIMEOUT", "ask_timeout", func(c *Config) *time.Duration { return &c.AskTimeout }).doc("",
		"how long a subagent's `ask_user` waits for the person (its timeout is paused meanwhile)"),
	text("AVA_ON_COMPLETE", "on_complete", func(c *Config) *string { return (*string)(&c.OnComplete) }).doc("",
		"what a session does when the background subagents it started have all ended: `summarize` (the orchestrator reports their results to you by itself, in one turn), `announce` (their results are posted as they are, with no model call) or `quiet` (nothing until your next message)"),
	text("AVA_ASK_ANSWERS", "ask_answers", func(c *Config) *string { return &c.AskAnswers }).doc("",
		"who answers the subagents' questions (`ask_user`): `person`, or `orchestrator` (the orchestrator answers for the person in a turn of the parent session)"),
	whole("AVA_RESUME_ATTEMPTS", "resume_attempts", func(c *Config) *int { return &c.ResumeAttempts }).doc("",
		"how many times a subagent whose process died (a crash, `kill -9`, a deploy) is resumed from its last checkpoint by the next process, when its role allows it (`resume:`); a run that dies again after that many is quarantined: ended `interrupted`, its parent told. 0: never resume (see [concepts.md](concepts.md#crash-and-resume))"),
	duration("AVA_SHUTDOWN_GRACE", "shutdown_grace", func(c *Config) *time.Duration { return &c.ShutdownGrace }).doc("",
		"how long a stopping daemon lets running turns finish (`ava serve --grace`)"),

	secret("ANTHROPIC_API_KEY", func(c *Config) *string { return &c.Anthropic.APIKey }).doc("none",
		"the Anthropic provider's key (see [models.md](models.md))"),
	text("ANTHROPIC_BASE_URL", "anthropic.base_url", func(c *Config) *string { return &c.Anthropic.BaseURL }).doc("the public API",
		"the Anthropic provider's endpoint: a proxy or a gateway"),
	secret("OPENAI_API_KEY", func(c *Config) *string { return &c.OpenAI.APIKey }).doc("none",
		"the OpenAI provider's key; optional for a server of your own"),
	text("OPENAI_BASE_URL", "openai.base_url", func(c *Config) *string { return &c.OpenAI.BaseURL }).doc("the public API",
		"the OpenAI provider's endpoint: a proxy, a gateway, an OpenAI-compatible server (Ollama, vLLM, llama.cpp)"),
	text("AVA_OPENAI_KIND", "openai_kind", func(c *Config) *string { return &c.OpenAIKind }).doc("`openai` without `OPENAI_BASE_URL` or with one on api.openai.com, else `compatible`",
		"what the OpenAI provider's endpoint is: `openai` (OpenAI's own API, or a proxy of it: OpenAI's model aliases, and its web search through the Responses API) or `compatible` (a server of your own speaking chat completions: no provider search; see [research.md](research.md#openai-the-responses-api))"),
	secret("OPENROUTER_API_KEY", func(c *Config) *string { return &c.OpenRouter.APIKey }).doc("none",
		"the OpenRouter provider's key"),
	text("OPENROUTER_BASE_URL", "openrouter.base_url", func(c *Config) *string { return &c.OpenRouter.BaseURL }).doc("the public API",
		"the OpenRouter provider's endpoint"),

	secret("TELEGRAM_BOT_TOKEN", func(c *Config) *string { return &c.TelegramBotToken }).doc("none",
		"starts the Telegram channel with `ava serve` (see [channels.md](channels.md#telegram))"),
	list("AVA_TELEGRAM_ALLOWED", "telegram_allowed", func(c *Config) *[]string { return &c.TelegramAllowed }).doc("none",
		"chat and user IDs the bot serves; empty: nobody (the daemon says so)").reloads(),
	text("AVA_TELEGRAM_API_URL", "telegram_api_url", func(c *Config) *string { return &c.TelegramAPIURL }).doc("`https://api.telegram.org`",
		"the Bot API's base URL (a proxy, or a test server)"),
	secret("AVA_TELEGRAM_WEBHOOK_SECRET", func(c *Config) *string { return &c.TelegramWebhookSecret }).doc("none",
		"webhook mode: updates come to `POST /telegram/webhook` with this secret token header instead of long polling"),

	secret("AVA_DATABASE_URL", func(c *Config) *string { return &c.DatabaseURL }).doc("none: SQLite `ava.db`",
		"a `postgres://` or `postgresql://` URL makes the store that PostgreSQL database; any other value is an error (see [cluster.md](cluster.md))"),
	text("AVA_ROLE", "role", func(c *Config) *string { return &c.Role }).doc("`all`",
		"with `AVA_DATABASE_URL`, what this process does in the cluster: `gateway`, `worker` or `all` (`ava serve --role`; see [cluster.md](cluster.md))"),
	duration("AVA_RECOVER_EVERY", "recover_every", func(c *Config) *time.Duration { return &c.RecoverEvery }).doc("`10s`",
		"how often a process that runs subagents looks for the runs of processes that are gone (and stops its own runs if it lost its lease)"),
	duration("AVA_LEASE_TTL", "lease_ttl", func(c *Config) *time.Duration { return &c.LeaseTTL }).doc("`30s`",
		"how long a process may go without renewing its lease (every sixth of it) before the others take its runs over; a process paused longer (SIGSTOP, a laptop asleep) stops those runs when it wakes, and the store refuses whatever it would still write for them (see [ownership.md](ownership.md#fencing-a-stale-owner-writes-nothing-issues-25-and-39)). The same on every process of a data root or cluster"),
	duration("AVA_API_TIMEOUT", "api_timeout", func(c *Config) *time.Duration { return &c.APITimeout }).doc("`15s`",
		"the daemon's deadline on every API request: one the store does not answer in time (a paused or unreachable database) gets 503 with `Retry-After`, and what it would have written is dropped; event streams and waits are bounded only in their reads of the store (see [api.md](api.md#deadlines-and-outages))"),
	Setting{Env: "AVA_TRUSTED_WORKSPACES", Key: "trusted_workspaces", apply: addTrustedWorkspaces, value: trustedValue, reload: true}.doc("none",
		"workspaces (separated by `:`) added to `trusted_workspaces:` of `config.yaml`, but without recorded contents: their role files stay untrusted (as do those of an entry written before Ava recorded contents) until `ava trust` records them; in the file, `ava trust` writes each entry with its role files' SHA-256"),

	text("AVA_SEARXNG_URL", "web.searxng_url", func(c *Config) *string { return &c.Web.SearXNGURL }).doc("none",
		"a SearXNG instance (its JSON API) as the `web_search` backend"),
	secret("BRAVE_API_KEY", func(c *Config) *string { return &c.Web.BraveAPIKey }).doc("none",
		"the Brave search API as the `web_search` backend"),
	text("AVA_BRAVE_BASE_URL", "web.brave_base_url", func(c *Config) *string { return &c.Web.BraveBaseURL }).doc("the public API",
		"the Brave backend's endpoint (a proxy, or a test server)"),
	secret("TAVILY_API_KEY", func(c *Config) *string { return &c.Web.TavilyAPIKey }).doc("none",
		"the Tavily search API as the `web_search` backend"),
	text("AVA_TAVILY_BASE_URL", "web.tavily_base_url", func(c *Config) *string { return &c.Web.TavilyBaseURL }).doc("the public API",
		"the Tavily backend's endpoint (a proxy, or a test server)"),
	text("AVA_WEB_SEARCH", "web_search", func(c *Config) *string { return &c.WebSearch }).doc("",
		"the search a role with `web_search` gets: `auto` (a configured backend — SearXNG, Brave, Tavily — first, else the provider's own web search where the role's model has one: Anthropic's search and fetch, OpenAI's search on its own API, OpenRouter's web plugin), `provider` (the provider's only), `searxng`, `brave`, `tavily` (that backend only) or `off` (no search); `ava roles` shows each role's (see [research.md](research.md))"),
	list("AVA_WEB_ALLOWED_DOMAINS", "web.allowed_domains", func(c *Config) *[]string { return &c.Web.AllowedDomains }).doc("none (every domain)",
		"the only domains the provider's web search and fetch may return (comma-separated); not with `web.blocked_domains`"),
	list("AVA_WEB_BLOCKED_DOMAINS", "web.blocked_domains", func(c *Config) *[]string { return &c.Web.BlockedDomains }).doc("none",
		"domains the provider's web search and fetch never return (comma-separated); not with `web.allowed_domains`"),
	boolean("AVA_WEB_ALLOW_PRIVATE", "web.allow_private", func(c *Config) *bool { return &c.Web.AllowPrivate }).doc("off",
		"let web tools fetch private and loopback addresses"),
	text("AVA_SANDBOX", "sandbox", func(c *Config) *string { return &c.Sandbox }).doc("`on`",
		"`off` runs `run_bash`, `python_exec` and stdio MCP servers unconfined, with your full access (startup and `ava roles` say so loudly); otherwise they run in the Linux sandbox (namespaces, Landlock, seccomp, rlimits; the workspace's `.ava`, `.git`, `.vscode`, `.idea`, `.envrc` and `.gitmodules` read-only to them, a missing `.ava`, `.git` or `.vscode` made as an empty folder, so git reads but does not commit there; see [security.md](security.md#process-sandbox)) and refuse, naming what is missing, where it cannot be set up"),
	list("AVA_EGRESS_ALLOW", "egress_allow", func(c *Config) *[]string { return &c.EgressAllow }).doc("none (every public host)",
		"domains (each with its subdomains) the process tools' egress proxy may reach, where a caller allows them network; the proxy always refuses private, loopback and link-local addresses like the web tools"),
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
	return Setting{Env: env, Key: key,
		apply: func(c *Config, v string) error { *field(c) = v; return nil },
		value: func(c Config) string { return *field(&c) }}
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
	}, value: func(c Config) string {
		if n := *field(&c); n != 0 {
			return strconv.Itoa(n)
		}
		return ""
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
	}, value: func(c Config) string {
		if f := *field(&c); f != 0 {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return ""
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
	}, value: func(c Config) string { return shortDuration(*field(&c)) }}
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
	}, value: func(c Config) string {
		if *field(&c) {
			return "true"
		}
		return ""
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
	}, value: func(c Config) string { return strings.Join(*field(&c), ",") }}
}

// shortDuration formats d as a person writes it (2m, not 2m0s); "" for 0.
func shortDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// addTrustedWorkspaces adds AVA_TRUSTED_WORKSPACES' paths (separated by
// the OS path list separator) to the file's, without contents.
func addTrustedWorkspaces(c *Config, v string) error {
	for _, p := range filepath.SplitList(v) {
		c.TrustedWorkspaces = append(c.TrustedWorkspaces, TrustedWorkspace{Path: p})
	}
	return nil
}

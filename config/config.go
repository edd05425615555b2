// Package config is Ava's configuration as data: Default, then the
// optional file $AVA_DATA_ROOT/config.yaml, then environment variables,
// then command-line flags (applied by the caller), then Validate. Secrets
// (API keys, tokens) come only from the environment; a config file that
// holds one is refused.
//
// Every setting is read here and nowhere else: Settings lists each
// variable with its config.yaml key, SecretEnv the secret ones. The
// packages that act on a setting (tool/web, sandbox, the daemon) take
// plain values from Config. config imports no runtime package: an MCP
// server's definition is package mcpspec's.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/internal/yamlerr"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/hookspec"
	"github.com/avaagent/ava/internal/fserr"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/mcpspec"
)

// FileName is the config file's name inside the data root.
const FileName = "config.yaml"

// Config is every setting of an Ava instance.
type Config struct {
	// DataRoot holds the store, logs and sessions (AVA_DATA_ROOT).
	DataRoot string `yaml:"-"`
	// Addr is the daemon's listen address (AVA_ADDR).
	Addr string `yaml:"addr"`
	// Token is the daemon's bearer token (AVA_TOKEN; environment only).
	Token string `yaml:"-"`
	// Model is the orchestrator's model, "provider/model" or an alias (AVA_MODEL).
	Model string `yaml:"model"`
	// MaxConcurrentSubagents limits running subagents (AVA_MAX_CONCURRENT_SUBAGENTS).
	MaxConcurrentSubagents int `yaml:"max_concurrent_subagents"`
	// SpawnOverflow is what a single spawn does when every slot is taken:
	// refuse or queue (AVA_SPAWN_OVERFLOW). Group members always queue.
	SpawnOverflow string `yaml:"spawn_overflow"`
	// MaxQueuedSubagents bounds the runs waiting for a slot
	// (AVA_MAX_QUEUED_SUBAGENTS).
	MaxQueuedSubagents int `yaml:"max_queued_subagents"`
	// Confirm is the spawn confirmation policy: always, never, above:<cents> (AVA_CONFIRM).
	Confirm string `yaml:"confirm"`
	// ConfirmTimeout is how long a spawn proposal waits for the person's
	// answer before it expires (AVA_CONFIRM_TIMEOUT).
	ConfirmTimeout time.Duration `yaml:"confirm_timeout"`
	// ConfirmProcessesAfter is how long an orchestrator's run_bash or
	// python_exec call must declare or be estimated to run for the
	// confirmation policy to ask before it runs (AVA_CONFIRM_PROCESSES_AFTER).
	ConfirmProcessesAfter time.Duration `yaml:"confirm_processes_after"`
	// Workspace is the folder file and shell tools work in (AVA_WORKSPACE).
	Workspace string `yaml:"workspace"`
	// StallAfter is how long a subagent may show no sign of life before it
	// is flagged stalled (AVA_STALL_AFTER).
	StallAfter time.Duration `yaml:"stall_after"`
	// ProgressAfter is how long a subagent runs before the person gets a
	// "still working" notice, and ProgressEvery how often after that
	// (AVA_PROGRESS_AFTER, AVA_PROGRESS_EVERY).
	ProgressAfter time.Duration `yaml:"progress_after"`
	ProgressEvery time.Duration `yaml:"progress_every"`
	// MergeWindow is how soon after a request starts the person's next
	// message cancels it and both are answered as one (AVA_MERGE_WINDOW;
	// 0 turns it off).
	MergeWindow time.Duration `yaml:"merge_window"`
	// AttachMaxBytes bounds one attached file (AVA_ATTACH_MAX_BYTES), and
	// AttachMaxFiles how many one message carries (AVA_ATTACH_MAX_FILES).
	AttachMaxBytes int `yaml:"attach_max_bytes"`
	AttachMaxFiles int `yaml:"attach_max_files"`
	// WrapUpAt is the share of any of a subagent's limits at which it is
	// told to finish with what it has (AVA_WRAP_UP_AT; 0 turns it off).
	WrapUpAt float64 `yaml:"wrap_up_at"`
	// AskTimeout is how long a subagent's ask_user waits for the person
	// (AVA_ASK_TIMEOUT); its run's timeout is paused meanwhile.
	AskTimeout time.Duration `yaml:"ask_timeout"`
	// OnComplete is what a session does when its background subagents
	// have ended (AVA_ON_COMPLETE): summarize (default), announce, quiet.
	OnComplete OnComplete `yaml:"on_complete"`
	// AskAnswers says who answers the subagents' questions: "person"
	// (default) or "orchestrator" (AVA_ASK_ANSWERS).
	AskAnswers string `yaml:"ask_answers"`
	// ResumeAttempts is how many times a run interrupted by its process's
	// end may be resumed by the next process, when its role allows it,
	// before it is quarantined as interrupted (AVA_RESUME_ATTEMPTS; 0
	// resumes none).
	ResumeAttempts int `yaml:"resume_attempts"`
	// ShutdownGrace is how long a stopping daemon lets running turns and
	// subagents finish (AVA_SHUTDOWN_GRACE; ava serve --grace).
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`

	Anthropic  Provider `yaml:"anthropic"`
	OpenAI     Provider `yaml:"openai"`
	OpenRouter Provider `yaml:"openrouter"`
	// OpenAIKind (AVA_OPENAI_KIND) says what the openai provider's
	// endpoint is: OpenAIKindOpenAI or OpenAIKindCompatible; empty
	// decides by its base URL (see OpenAIOwnAPI).
	OpenAIKind string `yaml:"openai_kind"`

	// Prices adds to or overrides the built-in price table (cents per
	// million tokens), keyed by model ID or provider/model.
	Prices llm.Prices `yaml:"prices"`
	// RateLimits paces the models of servers that send no rate-limit
	// headers (rpm, input_tpm, output_tpm per model ID or provider/model).
	RateLimits llm.RateLimits `yaml:"rate_limits"`
	// Aliases overrides the haiku/sonnet/opus aliases per provider.
	Aliases map[string]map[string]string `yaml:"aliases"`

	// TelegramBotToken (environment only) and TelegramAllowed configure
	// the Telegram channel.
	TelegramBotToken string   `yaml:"-"`
	TelegramAllowed  []string `yaml:"telegram_allowed"`
	// TelegramAPIURL is the Bot API's base URL (AVA_TELEGRAM_API_URL;
	// default the public one).
	TelegramAPIURL string `yaml:"telegram_api_url"`
	// TelegramWebhookSecret switches the channel to webhook mode
	// (AVA_TELEGRAM_WEBHOOK_SECRET, environment only): updates come to
	// POST /telegram/webhook with this secret token header.
	TelegramWebhookSecret string `yaml:"-"`

	// DatabaseURL (AVA_DATABASE_URL, environment only, since it may hold
	// a password) switches the store from the embedded SQLite file to
	// the PostgreSQL database at this postgres:// or postgresql:// URL.
	// Empty keeps SQLite.
	DatabaseURL string `yaml:"-"`
	// Role (AVA_ROLE, or ava serve --role) is what this process does in
	// a cluster on PostgreSQL: "gateway" (chats and streams; subagents
	// run on workers), "worker" (runs subagents) or "all" (both, the
	// default). Ignored with the embedded SQLite store.
	Role string `yaml:"role"`
	// RecoverEvery (AVA_RECOVER_EVERY) is how often a process that runs
	// subagents looks for the runs of processes that are gone (default
	// 10s): in a cluster, how soon a dead worker's runs resume elsewhere.
	RecoverEvery time.Duration `yaml:"recover_every"`
	// LeaseTTL (AVA_LEASE_TTL) is how long a process may go without
	// renewing its lease before the others count it gone and take its
	// runs over (default 30s; renewed every sixth of it). Shorter finds
	// a paused or partitioned process sooner; every process sharing a
	// data root or cluster must use the same.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// APITimeout (AVA_API_TIMEOUT) bounds every request of the daemon's
	// API (default 15s): one the store does not answer in time (a
	// paused or unreachable database) is answered 503 with Retry-After,
	// and what it would have written is dropped. Event streams and
	// waits are not bounded as a whole, only their reads of the store.
	APITimeout time.Duration `yaml:"api_timeout"`

	// TrustedWorkspaces are the workspaces the person trusted, each with
	// the role files of its .ava/agents/ they trusted, by content (`ava
	// trust` records them in the config file). A trusted file may
	// replace a built-in or user role of the same name and loads as
	// written; any other workspace role file (untrusted workspace, or a
	// file new or changed since `ava trust`) only adds a new name, and
	// loads clamped (subagent's workspace gate).
	// AVA_TRUSTED_WORKSPACES (separated by the OS path list separator)
	// adds paths without contents: their files stay untrusted until `ava
	// trust` records them.
	TrustedWorkspaces []TrustedWorkspace `yaml:"trusted_workspaces"`

	// MCPServers are MCP servers roles may name (a list, or a mapping by
	// name): a command run over stdio or a streamable HTTP URL.
	MCPServers mcpspec.Specs `yaml:"mcp_servers"`
	// MCPAllowedHosts are the non-loopback hosts an MCP server's URL may
	// be on; without them only 127.0.0.1, ::1 and localhost are.
	MCPAllowedHosts []string `yaml:"mcp_allowed_hosts"`
	// MCPIdleTimeout stops an MCP server no tool call has used for this
	// long (default 5m; negative: never).
	MCPIdleTimeout time.Duration `yaml:"mcp_idle_timeout"`

	// Hooks are the lifecycle hooks (package hooks): commands and
	// webhooks that hear subagent, session, proposal and question events,
	// delivered durably (docs/hooks.md). Only config.yaml and the data
	// root's role files may define hooks, never a workspace.
	Hooks []hookspec.Spec `yaml:"hooks"`

	// Web configures the web tools (web_search, http_get,
	// read_webpages).
	Web Web `yaml:"web"`
	// WebSearch chooses the search a role with web_search gets
	// (AVA_WEB_SEARCH): auto (a configured backend first, else the
	// provider's own search where the role's model has one), provider,
	// searxng, brave, tavily or off. See docs/research.md.
	WebSearch string `yaml:"web_search"`
	// Sandbox is "on" (the default when empty) or "off" (AVA_SANDBOX):
	// off runs the process tools and stdio MCP servers unconfined.
	Sandbox string `yaml:"sandbox"`
	// EgressAllow are the domains (each with its subdomains) the process
	// tools' egress proxy may reach; empty allows every public host
	// (AVA_EGRESS_ALLOW, comma-separated).
	EgressAllow []string `yaml:"egress_allow"`

	// Source lists where settings came from, for error messages.
	Source string `yaml:"-"`
}

// Provider is one model provider's connection settings.
type Provider struct {
	// APIKey comes only from the environment.
	APIKey  string `yaml:"-"`
	BaseURL string `yaml:"base_url"`
}

// The values of openai_kind.
const (
	// OpenAIKindOpenAI is OpenAI's own API (or a proxy of it): OpenAI's
	// model aliases, and its web search through the Responses API.
	OpenAIKindOpenAI = "openai"
	// OpenAIKindCompatible is a server of one's own that speaks chat
	// completions (Ollama, vLLM, llama.cpp, a gateway).
	OpenAIKindCompatible = "compatible"
)

// OpenAIOwnAPI reports whether the openai provider's endpoint is
// OpenAI's own API rather than a compatible server: openai_kind says
// so, else it is when openai.base_url is empty or on api.openai.com.
func (c Config) OpenAIOwnAPI() bool {
	switch c.OpenAIKind {
	case OpenAIKindOpenAI:
		return true
	case OpenAIKindCompatible:
		return false
	}
	return c.OpenAI.BaseURL == "" || strings.Contains(c.OpenAI.BaseURL, "api.openai.com")
}

// Web is the web tools' settings.
type Web struct {
	// SearXNGURL is a SearXNG instance's base URL (AVA_SEARXNG_URL).
	SearXNGURL string `yaml:"searxng_url"`
	// BraveAPIKey (BRAVE_API_KEY) and TavilyAPIKey (TAVILY_API_KEY)
	// enable those search backends; environment only.
	BraveAPIKey  string `yaml:"-"`
	TavilyAPIKey string `yaml:"-"`
	// BraveBaseURL and TavilyBaseURL override the backends' endpoints
	// (AVA_BRAVE_BASE_URL, AVA_TAVILY_BASE_URL).
	BraveBaseURL  string `yaml:"brave_base_url"`
	TavilyBaseURL string `yaml:"tavily_base_url"`
	// AllowPrivate lets the web tools reach private and loopback
	// addresses (AVA_WEB_ALLOW_PRIVATE).
	AllowPrivate bool `yaml:"allow_private"`
	// AllowedDomains and BlockedDomains pass to the provider's own web
	// search and fetch (AVA_WEB_ALLOWED_DOMAINS, AVA_WEB_BLOCKED_DOMAINS):
	// results only from the allowed ones, never from the blocked ones.
	// At most one of the two may be set.
	AllowedDomains []string `yaml:"allowed_domains"`
	BlockedDomains []string `yaml:"blocked_domains"`
}

// The values of WebSearch.
const (
	WebSearchAuto     = "auto"
	WebSearchProvider = "provider"
	WebSearchSearXNG  = "searxng"
	WebSearchBrave    = "brave"
	WebSearchTavily   = "tavily"
	WebSearchOff      = "off"
)

// validateWebSearch checks web_search against the backends configured.
func (c Config) validateWebSearch() []error {
	var errs []error
	need := func(what, env string) {
		errs = append(errs, fmt.Errorf("web_search (AVA_WEB_SEARCH): %q needs %s (%s)", c.WebSearch, what, env))
	}
	switch c.WebSearch {
	case WebSearchAuto, WebSearchProvider, WebSearchOff:
	case WebSearchSearXNG:
		if c.Web.SearXNGURL == "" {
			need("a SearXNG instance", "AVA_SEARXNG_URL")
		}
	case WebSearchBrave:
		if c.Web.BraveAPIKey == "" {
			need("a Brave key", "BRAVE_API_KEY")
		}
	case WebSearchTavily:
		if c.Web.TavilyAPIKey == "" {
			need("a Tavily key", "TAVILY_API_KEY")
		}
	default:
		errs = append(errs, fmt.Errorf("web_search (AVA_WEB_SEARCH): %q, use auto, provider, searxng, brave, tavily or off", c.WebSearch))
	}
	if len(c.Web.AllowedDomains) > 0 && len(c.Web.BlockedDomains) > 0 {
		errs = append(errs, errors.New("web.allowed_domains and web.blocked_domains: set one or the other (the providers take one)"))
	}
	return errs
}

// DefaultShutdownGrace is ShutdownGrace's default.
const DefaultShutdownGrace = 30 * time.Second

// Default returns the built-in defaults (the data root still unset).
func Default() Config {
	return Config{
		Addr:                   "127.0.0.1:7777",
		MaxConcurrentSubagents: 3,
		SpawnOverflow:          OverflowRefuse,
		MaxQueuedSubagents:     32,
		Confirm:                "always",
		StallAfter:             2 * time.Minute,
		ProgressAfter:          30 * time.Second,
		ProgressEvery:          time.Minute,
		MergeWindow:            3 * time.Second,
		AttachMaxBytes:         10 << 20,
		AttachMaxFiles:         10,
		WrapUpAt:               0.8,
		AskTimeout:             10 * time.Minute,
		AskAnswers:             "person",
		OnComplete:             Summarize,
		ResumeAttempts:         3,
		ConfirmTimeout:         10 * time.Minute,
		ConfirmProcessesAfter:  time.Minute,
		ShutdownGrace:          DefaultShutdownGrace,
		WebSearch:              WebSearchAuto,
	}
}

// DefaultDataRoot is $XDG_DATA_HOME/ava, else ~/.local/share/ava.
func DefaultDataRoot(getenv func(string) string) (string, error) {
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "ava"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the data root: set AVA_DATA_ROOT (no home directory: %w)", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "ava"), nil
}

// Load builds the configuration from defaults, the config file in the
// data root (if present) and the environment. It does not create the data
// root. Flags are applied by the caller, then Validate.
func Load(getenv func(string) string) (Config, error) {
	cfg := Default()
	root := getenv("AVA_DATA_ROOT")
	if root == "" {
		var err error
		if root, err = DefaultDataRoot(getenv); err != nil {
			return cfg, err
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return cfg, fmt.Errorf("data root %q: %w", root, err)
	}
	cfg.DataRoot = abs
	if f := fserr.FileInPath(abs); f != "" {
		return cfg, fmt.Errorf("data root %s: %s is a file, not a directory; move it or choose another data root (AVA_DATA_ROOT)", abs, f)
	}
	if err := cfg.loadFile(filepath.Join(abs, FileName)); err != nil {
		return cfg, err
	}
	if err := cfg.applyEnv(getenv); err != nil {
		return cfg, err
	}
	if cfg.Workspace == "" {
		if wd, err := os.Getwd(); err == nil {
			cfg.Workspace = wd
		}
	}
	return cfg, nil
}

// secretKeys are YAML keys that must never appear in a config file,
// alone or as the end of a key after an underscore (ava_token,
// ANTHROPIC_API_KEY, telegram_bot_token), in any case.
var secretKeys = []string{"api_key", "apikey", "token", "secret", "password"}

// isSecretKey reports whether a YAML key names a secret: one of Ava's
// secret variables (SecretEnv), or a key ending in a secret word.
func isSecretKey(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	for _, env := range SecretEnv() {
		if strings.EqualFold(k, env) {
			return true
		}
	}
	for _, s := range secretKeys {
		if k == s || strings.HasSuffix(k, "_"+s) {
			return true
		}
	}
	return false
}

func (c *Config) loadFile(path string) error {
	data, err := readConfigFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fserr.Wrap("read config", path, err)
	}
	if err := refuseSecrets(path, data); err != nil {
		return err
	}
	if err := yamlerr.Decode(data, c); err != nil {
		return fileError(path, err)
	}
	c.Source = path
	return nil
}

// fileError names the config file and the line a decoding error is on
// (yamlerr's words: "config … line 2: unknown setting `modle` — did you
// mean `model`?").
func fileError(path string, err error) error {
	var ye *yamlerr.Error
	if errors.As(err, &ye) && ye.Line() > 0 {
		return fmt.Errorf("config %s line %d: %s", path, ye.Line(), ye.Detail())
	}
	return fmt.Errorf("config %s: %w", path, err)
}

// refuseSecrets rejects a config file that holds a secret-looking key.
func refuseSecrets(path string, data []byte) error {
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return fileError(path, yamlerr.Explain(err, data, nil))
	}
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		for i := 0; i+1 < len(n.Content); i++ {
			k := n.Content[i]
			if n.Kind == yaml.MappingNode && i%2 == 0 && isSecretKey(k.Value) {
				return fmt.Errorf("config %s line %d: %q is a secret; put it in the environment (e.g. ANTHROPIC_API_KEY, AVA_TOKEN), not in a file (an MCP server gets a variable of Ava's environment through pass_env)", path, k.Line, k.Value)
			}
		}
		for _, ch := range n.Content {
			if err := walk(ch); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(&node)
}

// Validate checks every field and names the one that is wrong.
func (c Config) Validate() error {
	var errs []error
	if c.DataRoot == "" {
		errs = append(errs, errors.New("data root: empty (set AVA_DATA_ROOT)"))
	}
	if c.MaxConcurrentSubagents < 1 {
		errs = append(errs, fmt.Errorf("max_concurrent_subagents: %d, must be at least 1", c.MaxConcurrentSubagents))
	}
	if c.Model != "" {
		if err := llm.CheckModelName(c.Model, c.Aliases); err != nil {
			errs = append(errs, fmt.Errorf("model (AVA_MODEL): %w", err))
		}
	}
	if c.SpawnOverflow != OverflowRefuse && c.SpawnOverflow != OverflowQueue {
		errs = append(errs, fmt.Errorf("spawn_overflow (AVA_SPAWN_OVERFLOW): %q: use %s (refuse a spawn when every slot is taken) or %s (let it wait)",
			c.SpawnOverflow, OverflowRefuse, OverflowQueue))
	}
	if c.MaxQueuedSubagents < 1 {
		errs = append(errs, fmt.Errorf("max_queued_subagents (AVA_MAX_QUEUED_SUBAGENTS): %d, must be at least 1", c.MaxQueuedSubagents))
	}
	if _, err := ParseConfirm(c.Confirm); err != nil {
		errs = append(errs, err)
	}
	if c.ConfirmProcessesAfter <= 0 {
		errs = append(errs, fmt.Errorf("confirm_processes_after (AVA_CONFIRM_PROCESSES_AFTER): %s, must be positive", c.ConfirmProcessesAfter))
	}
	if c.ConfirmTimeout <= 0 {
		errs = append(errs, fmt.Errorf("confirm_timeout (AVA_CONFIRM_TIMEOUT): %s, must be positive", c.ConfirmTimeout))
	}
	if k := c.OpenAIKind; k != "" && k != OpenAIKindOpenAI && k != OpenAIKindCompatible {
		errs = append(errs, fmt.Errorf("openai_kind (AVA_OPENAI_KIND): %q, use %s (OpenAI's own API) or %s (a server of your own)",
			k, OpenAIKindOpenAI, OpenAIKindCompatible))
	}
	if _, err := ParseOnComplete(string(c.OnComplete)); err != nil {
		errs = append(errs, err)
	}
	if c.AskAnswers != "person" && c.AskAnswers != "orchestrator" {
		errs = append(errs, fmt.Errorf("ask_answers (AVA_ASK_ANSWERS): %q, use person or orchestrator", c.AskAnswers))
	}
	if c.ResumeAttempts < 0 {
		errs = append(errs, fmt.Errorf("resume_attempts (AVA_RESUME_ATTEMPTS): %d, must be at least 0 (0: never resume)", c.ResumeAttempts))
	}
	if c.AskTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ask_timeout (AVA_ASK_TIMEOUT): %s, must be positive", c.AskTimeout))
	}
	if c.WrapUpAt < 0 || c.WrapUpAt >= 1 {
		errs = append(errs, fmt.Errorf("wrap_up_at (AVA_WRAP_UP_AT): %g, must be at least 0 (off) and below 1", c.WrapUpAt))
	}
	if c.AttachMaxBytes < 1 {
		errs = append(errs, fmt.Errorf("attach_max_bytes (AVA_ATTACH_MAX_BYTES): %d, must be at least 1", c.AttachMaxBytes))
	}
	if c.AttachMaxFiles < 1 {
		errs = append(errs, fmt.Errorf("attach_max_files (AVA_ATTACH_MAX_FILES): %d, must be at least 1", c.AttachMaxFiles))
	}
	if c.MergeWindow < 0 {
		errs = append(errs, fmt.Errorf("merge_window (AVA_MERGE_WINDOW): %s, must not be negative", c.MergeWindow))
	}
	if c.ProgressAfter <= 0 || c.ProgressEvery <= 0 {
		errs = append(errs, fmt.Errorf("progress_after and progress_every: %s and %s, must be positive", c.ProgressAfter, c.ProgressEvery))
	}
	if c.StallAfter < 0 {
		errs = append(errs, fmt.Errorf("stall_after: %s, must not be negative", c.StallAfter))
	}
	errs = append(errs, c.validateProcess()...)
	errs = append(errs, c.validateWebSearch()...)
	for k, p := range c.Prices {
		if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 || p.PerSearch < 0 {
			errs = append(errs, fmt.Errorf("prices.%s: prices must not be negative", k))
		}
	}
	for k, l := range c.RateLimits {
		if l.RPM < 0 || l.InputTPM < 0 || l.OutputTPM < 0 || l.Window < 0 {
			errs = append(errs, fmt.Errorf("rate_limits.%s: rpm, input_tpm, output_tpm and window must not be negative", k))
		}
	}
	if c.DatabaseURL != "" && !IsPostgresURL(c.DatabaseURL) {
		errs = append(errs, errors.New("AVA_DATABASE_URL: not a postgres:// or postgresql:// URL; leave it unset to use the embedded SQLite store"))
	}
	switch c.Role {
	case "", RoleAll, RoleGateway, RoleWorker:
	default:
		errs = append(errs, fmt.Errorf("role (AVA_ROLE): %q, use gateway, worker or all", c.Role))
	}
	seen := map[string]bool{}
	for _, sp := range c.MCPServers {
		if err := sp.Validate(c.MCPAllowedHosts); err != nil {
			errs = append(errs, fmt.Errorf("mcp_servers: %w", err))
		}
		if seen[sp.Name] {
			errs = append(errs, fmt.Errorf("mcp_servers: MCP server %s defined twice", sp.Name))
		}
		seen[sp.Name] = true
	}
	for i, h := range c.Hooks {
		if err := h.Validate(nil); err != nil {
			errs = append(errs, fmt.Errorf("hooks[%d]: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		if c.Source != "" {
			return fmt.Errorf("configuration (%s and environment): %w", c.Source, err)
		}
		return fmt.Errorf("configuration: %w", err)
	}
	return nil
}

// validateProcess checks the settings of the process itself: its
// shutdown, its lease and recovery, its sandbox.
func (c Config) validateProcess() []error {
	var errs []error
	if c.ShutdownGrace <= 0 {
		errs = append(errs, fmt.Errorf("shutdown_grace (AVA_SHUTDOWN_GRACE): %s, must be positive", c.ShutdownGrace))
	}
	if c.RecoverEvery < 0 {
		errs = append(errs, fmt.Errorf("recover_every (AVA_RECOVER_EVERY): %s, must be positive (or unset: 10s)", c.RecoverEvery))
	}
	if c.APITimeout != 0 && c.APITimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("api_timeout (AVA_API_TIMEOUT): %s, must be at least 100ms (or unset: 15s)", c.APITimeout))
	}
	if c.LeaseTTL != 0 && c.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("lease_ttl (AVA_LEASE_TTL): %s, must be at least 1s (or unset: 30s)", c.LeaseTTL))
	}
	if s := strings.TrimSpace(c.Sandbox); s != "" && !strings.EqualFold(s, "on") && !strings.EqualFold(s, "off") {
		errs = append(errs, fmt.Errorf("sandbox (AVA_SANDBOX): %q, use on or off", c.Sandbox))
	}
	return errs
}

// Spawn overflow policies (SpawnOverflow).
const (
	OverflowRefuse = "refuse"
	OverflowQueue  = "queue"
)

// ConfirmPolicy says when a spawn needs the person's confirmation.
type ConfirmPolicy struct {
	// Always and Never are the two fixed policies; otherwise spawns whose
	// maximum cost is above AboveCents need confirmation.
	Always, Never bool
	AboveCents    float64
}

// ParseConfirm parses "always", "never" or "above:<cents>" (with
// confirm.ParsePolicy, the one parser of the policy).
func ParseConfirm(s string) (ConfirmPolicy, error) {
	p, err := confirm.ParsePolicy(s)
	if err != nil {
		return ConfirmPolicy{}, err
	}
	return ConfirmPolicy{Always: p.Ask == confirm.Always, Never: p.Ask == confirm.Never, AboveCents: p.AboveCents}, nil
}

// EnsureDataRoot creates the data root with private permissions (0700)
// if it does not exist. Its error is one line naming the data root and the
// cause: permission denied, a read-only file system, a full disk, or a
// file where a directory is needed.
func (c Config) EnsureDataRoot() error {
	if err := os.MkdirAll(c.DataRoot, 0o700); err != nil {
		return fserr.Wrap("create data root", c.DataRoot, err)
	}
	return nil
}

// Secrets returns the secret values in use (every secret setting's, and
// the database URL's password), which the redactor masks wherever Ava
// keeps or shows text (see package redact).
func (c Config) Secrets() []string {
	var out []string
	for _, s := range settings {
		if s.Secret() && *s.secret(&c) != "" {
			out = append(out, *s.secret(&c))
		}
	}
	if p := databasePassword(c.DatabaseURL); p != "" {
		out = append(out, p)
	}
	return out
}

// SandboxOff reports whether the configuration turns the process
// sandbox off (sandbox: off, AVA_SANDBOX=off).
func (c Config) SandboxOff() bool { return strings.EqualFold(strings.TrimSpace(c.Sandbox), "off") }

// IsPostgresURL reports whether s is a postgres:// or postgresql:// URL,
// the values of AVA_DATABASE_URL that select the PostgreSQL store.
func IsPostgresURL(s string) bool {
	l := strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// databasePassword is the password in a database URL, "" if none.
func databasePassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// Roles of a process in a cluster (Config.Role).
const (
	RoleAll     = "all"
	RoleGateway = "gateway"
	RoleWorker  = "worker"
)

// Package app assembles an Ava instance from its configuration: the model
// catalog, the store, the audit log, the event hub, the tools and the
// subagent manager. The command line and the daemon both start here;
// programs embedding Ava as a library may use it or wire the parts
// themselves.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
	"github.com/avaagent/ava/llm/openai"
	"github.com/avaagent/ava/llm/ratelimit"
	"github.com/avaagent/ava/llm/scripted"
)

// ErrNoModel is returned when no provider is configured and no model was
// asked for. Its message says how to configure one or go offline.
var ErrNoModel = errors.New(`no model provider is configured.
Set one of:
  ANTHROPIC_API_KEY=…                         (Anthropic; AVA_MODEL=anthropic/sonnet)
  OPENROUTER_API_KEY=…                        (OpenRouter; AVA_MODEL=openrouter/sonnet)
  OPENAI_API_KEY=…                            (OpenAI; AVA_MODEL=openai/gpt-5-mini)
  OPENAI_BASE_URL=http://localhost:11434/v1 AVA_MODEL=openai/llama3.2   (Ollama, vLLM, llama.cpp: any OpenAI-compatible server)
or try Ava offline with the scripted demo model: --offline (or AVA_MODEL=scripted/demo;
in a Go program, cfg, _ = ava.Offline(cfg) before ava.Open)`)

// Catalog builds the model catalog from cfg: every provider whose
// settings are present, plus the offline scripted model, always available
// under the name "scripted" but never chosen by default. Its providers
// are paced by a rate limiter of their own (see catalog).
func Catalog(cfg config.Config, log *slog.Logger) (*llm.Catalog, error) {
	return catalog(cfg, log, ratelimit.NewRegistry(cfg.RateLimits, log))
}

// catalog builds the catalog with every real provider paced by limits
// (one limiter per key and model, shared by every agent of the process)
// inside the retry policy, so that retries are paced too.
func catalog(cfg config.Config, log *slog.Logger, limits *ratelimit.Registry) (*llm.Catalog, error) {
	cat := llm.NewCatalog(llm.DefaultPrices.Merge(cfg.Prices))
	add := func(p llm.Provider, key string, aliases map[string]string) {
		cat.Add(llm.WithRetry(limits.Wrap(p, key), llm.DefaultRetryPolicy), aliases)
	}
	if cfg.Anthropic.APIKey != "" {
		p, err := anthropic.New(anthropic.Config{APIKey: cfg.Anthropic.APIKey, BaseURL: cfg.Anthropic.BaseURL, Logger: log,
			HTTPClient: ratelimit.HTTPClient()})
		if err != nil {
			return nil, fmt.Errorf("anthropic provider: %w", err)
		}
		add(p, cfg.Anthropic.APIKey, cfg.Aliases[p.Name()])
	}
	if cfg.OpenRouter.APIKey != "" {
		p, err := openai.New(openai.Config{Name: "openrouter", APIKey: cfg.OpenRouter.APIKey, BaseURL: cfg.OpenRouter.BaseURL, Logger: log,
			Headers: map[string]string{"X-Title": "Ava"}, HTTPClient: ratelimit.HTTPClient(), ServerSearch: openai.SearchWebPlugin})
		if err != nil {
			return nil, fmt.Errorf("openrouter provider: %w", err)
		}
		add(p, cfg.OpenRouter.APIKey, cfg.Aliases[p.Name()])
	}
	if cfg.OpenAI.APIKey != "" || cfg.OpenAI.BaseURL != "" {
		p, err := openai.New(openai.Config{Name: "openai", APIKey: cfg.OpenAI.APIKey, BaseURL: cfg.OpenAI.BaseURL, Logger: log,
			HTTPClient: ratelimit.HTTPClient(), ServerSearch: openAISearch(cfg)})
		if err != nil {
			return nil, fmt.Errorf("openai provider: %w", err)
		}
		// A keyless server of one's own is told apart by its address.
		add(p, cfg.OpenAI.APIKey+"@"+cfg.OpenAI.BaseURL, openAIAliases(cfg))
	}
	hasReal := !cat.Empty()
	cat.Add(scripted.New(), scriptedAliases(cfg))
	if hasReal {
		cat.Default = firstOf(cat.Providers(), "anthropic", "openrouter", "openai")
	} else {
		cat.Default = scripted.Name
	}
	return cat, nil
}

// scriptedAliases are the offline model's aliases: the demo script for
// all three, unless config.yaml's aliases name a script for one (the
// operator may name a scripted model; a role using the alias then runs
// that script).
func scriptedAliases(cfg config.Config) map[string]string {
	a := map[string]string{"haiku": "demo", "sonnet": "demo", "opus": "demo"}
	maps.Copy(a, cfg.Aliases[scripted.Name])
	return a
}

// openAIAliases are the aliases of the openai provider: the configured
// ones; else, for a server of your own (OPENAI_BASE_URL), the model
// AVA_MODEL names on it for all three, or none, so that a role's "haiku"
// never asks a local server for OpenAI's model names; else OpenAI's own
// (nil: llm.DefaultAliases).
func openAIAliases(cfg config.Config) map[string]string {
	if a, ok := cfg.Aliases["openai"]; ok {
		return a
	}
	if !customOpenAI(cfg) {
		return nil
	}
	prov, id, ok := strings.Cut(cfg.Model, "/")
	if !ok || prov != "openai" || id == "" {
		return map[string]string{}
	}
	return map[string]string{"haiku": id, "sonnet": id, "opus": id}
}

// customOpenAI reports whether the openai provider is a server of the
// person's own (Ollama, vLLM, …) rather than OpenAI's API.
func customOpenAI(cfg config.Config) bool { return !cfg.OpenAIOwnAPI() }

// openAISearch is the web search of the openai provider's endpoint:
// OpenAI's own (the Responses API) or none (a compatible server).
func openAISearch(cfg config.Config) openai.ServerSearch {
	if cfg.OpenAIOwnAPI() {
		return openai.SearchResponses
	}
	return openai.SearchNone
}

func firstOf(have []string, order ...string) string {
	for _, o := range order {
		for _, h := range have {
			if h == o {
				return o
			}
		}
	}
	return ""
}

// HasRealProvider reports whether any provider other than the offline
// scripted model is configured.
func HasRealProvider(cat *llm.Catalog) bool {
	for _, p := range cat.Providers() {
		if p != scripted.Name {
			return true
		}
	}
	return false
}

// IsOffline reports whether m is the offline scripted model.
func IsOffline(m llm.Model) bool { return m.Provider.Name() == scripted.Name }

// OrchestratorModel resolves the orchestrator's model: name if given,
// else AVA_MODEL, else the default provider's "sonnet". With no real
// provider and no explicit model, it returns ErrNoModel. A bare
// OpenAI-compatible server (base URL, no model) must be told its model.
func OrchestratorModel(cfg config.Config, cat *llm.Catalog, name string) (llm.Model, error) {
	if name == "" {
		name = cfg.Model
	}
	if name == "" {
		if !HasRealProvider(cat) {
			return llm.Model{}, ErrNoModel
		}
		if cat.Default == "openai" && customOpenAI(cfg) {
			return llm.Model{}, fmt.Errorf("OPENAI_BASE_URL is set to %s but no model is named: set AVA_MODEL=openai/<model your server serves> (e.g. openai/llama3.2)", cfg.OpenAI.BaseURL)
		}
		name = "sonnet"
	}
	m, err := cat.Resolve(name)
	if err != nil {
		if !HasRealProvider(cat) {
			return llm.Model{}, fmt.Errorf("%w\n(%v)", ErrNoModel, err)
		}
		return llm.Model{}, err
	}
	return m, nil
}

// HasRealProviderConfig reports whether cfg configures any real provider.
func HasRealProviderConfig(cfg config.Config) bool {
	return cfg.Anthropic.APIKey != "" || cfg.OpenRouter.APIKey != "" || cfg.OpenAI.APIKey != "" || cfg.OpenAI.BaseURL != ""
}

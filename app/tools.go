package app

import (
	"context"
	"strings"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/files"
	"github.com/avaagent/ava/tool/logs"
	"github.com/avaagent/ava/tool/memory"
	"github.com/avaagent/ava/tool/shell"
	"github.com/avaagent/ava/tool/web"
)

// builtinTools are every built-in tool, configured from the instance's
// configuration.
func (in *Instance) builtinTools() []tool.Tool {
	ws := in.Config.Workspace
	var out []tool.Tool
	out = append(out, web.New(webConfigFor(in.Config)).All()...)
	out = append(out, files.New(files.Config{Workspace: ws, Deny: []string{in.Config.DataRoot}}).All()...)
	out = append(out, shell.New(in.shellConfig()).All()...)
	out = append(out, memory.New(in.Store).All()...)
	return out
}

// webConfig is the web tools' configuration from config.yaml's web
// settings and their variables.
func webConfig(c config.Web) web.Config {
	return web.Config{SearXNGURL: c.SearXNGURL, BraveAPIKey: c.BraveAPIKey, BraveBaseURL: c.BraveBaseURL,
		TavilyAPIKey: c.TavilyAPIKey, TavilyBaseURL: c.TavilyBaseURL, AllowPrivate: c.AllowPrivate}
}

// webConfigFor is webConfig with the web_search setting's choice of
// backend: Ava's web_search uses only the backend it names, and none
// when it is off or the provider's.
func webConfigFor(c config.Config) web.Config {
	w := webConfig(c.Web)
	switch c.WebSearch {
	case config.WebSearchSearXNG:
		w.BraveAPIKey, w.TavilyAPIKey = "", ""
	case config.WebSearchBrave:
		w.SearXNGURL, w.TavilyAPIKey = "", ""
	case config.WebSearchTavily:
		w.SearXNGURL, w.BraveAPIKey = "", ""
	case config.WebSearchOff:
		w.SearXNGURL, w.BraveAPIKey, w.TavilyAPIKey = "", "", ""
		w.SearchOff = "web_search is off here (web_search: off in Ava's configuration)"
	case config.WebSearchProvider:
		w.SearXNGURL, w.BraveAPIKey, w.TavilyAPIKey = "", "", ""
		w.SearchOff = "Ava's web_search is not used here: search is the model provider's own (web_search: provider in Ava's configuration)"
	}
	return w
}

// searchBackends names the search backends configured for Ava's own
// web_search, in the order it tries them.
func searchBackends(c web.Config) []string {
	var out []string
	if c.SearXNGURL != "" {
		out = append(out, "SearXNG")
	}
	if c.BraveAPIKey != "" {
		out = append(out, "Brave")
	}
	if c.TavilyAPIKey != "" {
		out = append(out, "Tavily")
	}
	return out
}

// searchFor is the web search a subagent whose role lists web_search
// gets on a model of provider, by the web_search setting: auto takes a
// configured backend first, else the provider's own search where it has
// one, else Ava's tool (which says it is not configured). The provider's
// search is not offered where it cannot apply the configured domain
// filters: Ava never pretends they apply.
func (in *Instance) searchFor(provider string) subagent.Search {
	c := in.Config
	own := searchBackends(webConfigFor(c))
	switch c.WebSearch {
	case config.WebSearchOff:
		return subagent.Search{Via: "off (web_search: off)"}
	case config.WebSearchProvider:
		s, _ := in.providerSearch(provider)
		return s
	}
	if len(own) > 0 {
		return subagent.Search{Via: strings.Join(own, ", "), Own: true}
	}
	if c.WebSearch == config.WebSearchAuto {
		if s, has := in.providerSearch(provider); s.Server != nil {
			return s
		} else if has {
			// The provider searches, but not within the configured
			// domains: Ava's tool stays, and says it is not configured.
			return subagent.Search{Via: s.Via + "; Ava's web_search is not configured", Own: true}
		}
	}
	return subagent.Search{Via: "not configured (set AVA_SEARXNG_URL, BRAVE_API_KEY or TAVILY_API_KEY, or use a model whose provider searches)", Own: true}
}

// providerSearch is the provider's own search (s.Server set) when it has
// one here (has: the openai provider only on OpenAI's own API) and it
// can apply the configured domain filters; else s.Via says why not.
func (in *Instance) providerSearch(provider string) (s subagent.Search, has bool) {
	c := in.Config
	if !llm.HasServerSearch(provider) || (provider == "openai" && !c.OpenAIOwnAPI()) {
		return subagent.Search{Via: "none: " + provider + " has no web search of its own (web_search: provider)"}, false
	}
	allowed, blocked := llm.ServerSearchDomains(provider)
	switch {
	case len(c.Web.AllowedDomains) > 0 && !allowed:
		return subagent.Search{Via: "none: " + provider + "'s web search cannot keep to web.allowed_domains"}, true
	case len(c.Web.BlockedDomains) > 0 && !blocked:
		return subagent.Search{Via: "none: " + provider + "'s web search cannot block web.blocked_domains"}, true
	}
	via := provider + "'s own web search"
	switch provider {
	case "openai":
		via = "openai's own web search (Responses API)"
	case "openrouter":
		via = "openrouter's web plugin (one search of 5 results per task or follow-up)"
	}
	return subagent.Search{Via: via, Server: &llm.ServerTools{WebSearch: true, WebFetch: llm.HasServerFetch(provider),
		AllowedDomains: c.Web.AllowedDomains, BlockedDomains: c.Web.BlockedDomains}}, true
}

// OrchestratorTools returns the orchestrator's registry: the built-ins
// plus the subagent tools.
func (in *Instance) OrchestratorTools(ctx context.Context) (*tool.Registry, error) {
	extra := append(in.Subagent.Tools(), logs.New(in.LogReader(audit.ReaderOptions{Logger: in.Log}), nil))
	// The orchestrator's long process calls ask first, like its spawns,
	// when the confirmation policy asks (subagent.ConfirmProcesses).
	def := in.shellConfig().Timeout
	if def <= 0 {
		def = shell.DefaultTimeout
	}
	var tools []tool.Tool
	for _, t := range in.Tools.Tools() {
		tools = append(tools, in.Subagent.ConfirmProcesses(t, in.Config.ConfirmProcessesAfter, def))
	}
	return tool.NewRegistry(append(tools, extra...)...)
}

package llm

import "strings"

// Price is what a model charges, in US cents per million tokens. A zero
// cache rate means the price names none (OpenAI bills cache writes as
// plain input; a price in config.yaml may give only input and output):
// those tokens are billed at the input rate, never for free.
type Price struct {
	Input      float64 `json:"input" yaml:"input"`
	Output     float64 `json:"output" yaml:"output"`
	CacheRead  float64 `json:"cache_read" yaml:"cache_read"`
	CacheWrite float64 `json:"cache_write" yaml:"cache_write"`
	// PerSearch is the price of one server-side web search, in cents.
	PerSearch float64 `json:"per_search,omitempty" yaml:"per_search"`
}

// AnthropicSearchCents is what one search of Anthropic's web search
// tool costs: $10 per 1,000 searches.
const AnthropicSearchCents = 1.0

// OpenAISearchCents is what one web_search call of OpenAI's Responses
// API costs on the gpt-4o, gpt-4.1, gpt-5 and o-series models: $10 per
// 1,000 calls (the search content's tokens are billed as input tokens).
const OpenAISearchCents = 1.0

// OpenRouterSearchCents is what one search of OpenRouter's web plugin
// costs as Ava sends it (the Exa engine, five results): $4 per 1,000
// results. It replaces the model's own per_search on OpenRouter, since
// OpenRouter, not the model's maker, runs the search (a price keyed
// "openrouter/<model>" with its own per_search overrides it).
const OpenRouterSearchCents = 5 * 0.4

// Cost returns what u costs at p, in cents: its tokens, cache reads and
// writes at their own rates (the input rate where p names none), and
// its server-side searches.
func (p Price) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	return (float64(u.InputTokens)*p.Input+float64(u.OutputTokens)*p.Output+
		float64(u.CacheReadTokens)*read+float64(u.CacheWriteTokens)*write)/1e6 +
		float64(u.WebSearches)*p.PerSearch
}

// Prices maps model IDs to prices. Keys are bare model IDs
// ("claude-sonnet-4-5") or full names ("ollama/llama3.2"); a full name wins.
type Prices map[string]Price

// DefaultPrices holds list prices (cents per million tokens) of the models
// the seeds name and the common OpenAI ones. Config may add or override.
var DefaultPrices = Prices{
	"claude-opus-4-5":   {Input: 500, Output: 2500, CacheRead: 50, CacheWrite: 625, PerSearch: AnthropicSearchCents},
	"claude-opus-4-1":   {Input: 1500, Output: 7500, CacheRead: 150, CacheWrite: 1875, PerSearch: AnthropicSearchCents},
	"claude-opus-4":     {Input: 1500, Output: 7500, CacheRead: 150, CacheWrite: 1875, PerSearch: AnthropicSearchCents},
	"claude-sonnet-4-5": {Input: 300, Output: 1500, CacheRead: 30, CacheWrite: 375, PerSearch: AnthropicSearchCents},
	"claude-sonnet-4":   {Input: 300, Output: 1500, CacheRead: 30, CacheWrite: 375, PerSearch: AnthropicSearchCents},
	"claude-3-7-sonnet": {Input: 300, Output: 1500, CacheRead: 30, CacheWrite: 375, PerSearch: AnthropicSearchCents},
	"claude-haiku-4-5":  {Input: 100, Output: 500, CacheRead: 10, CacheWrite: 125, PerSearch: AnthropicSearchCents},
	"claude-3-5-haiku":  {Input: 80, Output: 400, CacheRead: 8, CacheWrite: 100, PerSearch: AnthropicSearchCents},
	"gpt-5":             {Input: 125, Output: 1000, CacheRead: 12.5, PerSearch: OpenAISearchCents},
	"gpt-5-mini":        {Input: 25, Output: 200, CacheRead: 2.5, PerSearch: OpenAISearchCents},
	"gpt-5-nano":        {Input: 5, Output: 40, CacheRead: 0.5, PerSearch: OpenAISearchCents},
	"gpt-4.1":           {Input: 200, Output: 800, CacheRead: 50, PerSearch: OpenAISearchCents},
	"gpt-4.1-mini":      {Input: 40, Output: 160, CacheRead: 10, PerSearch: OpenAISearchCents},
	"gpt-4.1-nano":      {Input: 10, Output: 40, CacheRead: 2.5, PerSearch: OpenAISearchCents},
	"gpt-4o":            {Input: 250, Output: 1000, CacheRead: 125, PerSearch: OpenAISearchCents},
	"gpt-4o-mini":       {Input: 15, Output: 60, CacheRead: 7.5, PerSearch: OpenAISearchCents},
	"o3":                {Input: 200, Output: 800, CacheRead: 50, PerSearch: OpenAISearchCents},
	"o4-mini":           {Input: 110, Output: 440, CacheRead: 27.5, PerSearch: OpenAISearchCents},
}

// Lookup finds the price of provider/model. It tries the full name, the
// bare ID, the ID after a vendor prefix ("anthropic/claude-sonnet-4.5" on
// OpenRouter), dots read as dashes, and finally the ID without a trailing
// date or "-latest" suffix. ok is false when nothing matches: the run's cost
// is then counted as zero and callers should say so.
//
// On OpenRouter, a search is its web plugin's (OpenRouterSearchCents)
// whatever the model, unless the price is keyed by the full name and
// names its own per_search.
func (ps Prices) Lookup(provider, model string) (Price, bool) {
	p, ok := lookupModel(ps, provider, model)
	if provider == "openrouter" {
		if full, has := ps[provider+"/"+model]; !has || full.PerSearch == 0 {
			p.PerSearch = OpenRouterSearchCents
		}
	}
	return p, ok
}

// lookupModel finds provider/model in m by the rules of Prices.Lookup.
func lookupModel[V any](m map[string]V, provider, model string) (V, bool) {
	candidates := []string{provider + "/" + model, model}
	if i := strings.LastIndex(model, "/"); i >= 0 {
		candidates = append(candidates, model[i+1:])
	}
	for _, c := range candidates {
		for _, k := range []string{c, strings.ReplaceAll(c, ".", "-"), trimVersionSuffix(c), trimVersionSuffix(strings.ReplaceAll(c, ".", "-"))} {
			if v, ok := m[k]; ok {
				return v, true
			}
		}
	}
	var zero V
	return zero, false
}

// trimVersionSuffix drops "-latest" or a trailing "-YYYYMMDD" date.
func trimVersionSuffix(id string) string {
	id = strings.TrimSuffix(id, "-latest")
	if i := strings.LastIndex(id, "-"); i >= 0 && len(id)-i-1 == 8 && strings.Trim(id[i+1:], "0123456789") == "" {
		return id[:i]
	}
	return id
}

// Merge returns ps with every entry of over added or replaced.
func (ps Prices) Merge(over Prices) Prices {
	out := make(Prices, len(ps)+len(over))
	for k, v := range ps {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

package llm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/avaagent/ava/internal/closest"
)

// ErrNoProvider means no model provider is configured.
var ErrNoProvider = errors.New("no model provider configured")

// DefaultAliases maps each known provider's aliases to its model IDs.
var DefaultAliases = map[string]map[string]string{
	"anthropic":  {"haiku": "claude-haiku-4-5", "sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5"},
	"openrouter": {"haiku": "anthropic/claude-haiku-4.5", "sonnet": "anthropic/claude-sonnet-4.5", "opus": "anthropic/claude-opus-4.5"},
	"openai":     {"haiku": "gpt-5-mini", "sonnet": "gpt-5", "opus": "gpt-5"},
}

// Model is a resolved model: the provider to call and its model ID.
type Model struct {
	Provider Provider
	// ID is the provider's model ID, sent on the wire.
	ID string
	// Price is the model's price; Priced is false when it is unknown.
	Price  Price
	Priced bool
	// Images says the model takes image blocks (TakesImages).
	Images bool
}

// ImageModels are the models known to take images, looked up as prices
// are (a full name, a bare ID, the ID after a vendor prefix, dots read
// as dashes, without a date suffix): every Claude model Ava names and
// OpenAI's vision models. A model not found here is given its images as
// files only.
var ImageModels = map[string]bool{
	"claude-opus-4-5": true, "claude-opus-4-1": true, "claude-opus-4": true,
	"claude-sonnet-4-5": true, "claude-sonnet-4": true, "claude-3-7-sonnet": true,
	"claude-haiku-4-5": true, "claude-3-5-haiku": true,
	"gpt-5": true, "gpt-5-mini": true, "gpt-5-nano": true,
	"gpt-4.1": true, "gpt-4.1-mini": true, "gpt-4.1-nano": true,
	"gpt-4o": true, "gpt-4o-mini": true, "o3": true, "o4-mini": true,
}

// ImageTaker is a provider whose models all take images whatever their
// name (the offline scripted model), so that ImageModels need not list
// them.
type ImageTaker interface {
	TakesImages(model string) bool
}

// TakesImages reports whether the model id of provider p takes image
// blocks: p says so (ImageTaker), or ImageModels lists it.
func TakesImages(p Provider, id string) bool {
	if t, ok := p.(ImageTaker); ok {
		return t.TakesImages(id)
	}
	ok, _ := lookupModel(ImageModels, p.Name(), id)
	return ok
}

// Name is the model's full name, "provider/id".
func (m Model) Name() string { return m.Provider.Name() + "/" + m.ID }

// Catalog resolves model names to providers. Names are "provider/model"
// (the model part may itself hold slashes, as OpenRouter's do), a bare
// alias ("sonnet"), or a bare model ID for the default provider.
type Catalog struct {
	providers map[string]Provider
	aliases   map[string]map[string]string
	prices    Prices
	// Default is the provider used for bare names; empty means the first
	// configured in the order anthropic, openrouter, openai, then any.
	Default string
}

// NewCatalog returns an empty catalog using prices for cost.
func NewCatalog(prices Prices) *Catalog {
	return &Catalog{providers: map[string]Provider{}, aliases: map[string]map[string]string{}, prices: prices}
}

// Add registers p under p.Name() with its aliases (nil uses
// DefaultAliases for that name).
func (c *Catalog) Add(p Provider, aliases map[string]string) {
	c.providers[p.Name()] = p
	if aliases == nil {
		aliases = DefaultAliases[p.Name()]
	}
	c.aliases[p.Name()] = aliases
}

// Providers lists the configured providers' names, sorted.
func (c *Catalog) Providers() []string {
	names := make([]string, 0, len(c.providers))
	for n := range c.providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Empty reports whether no provider is configured.
func (c *Catalog) Empty() bool { return len(c.providers) == 0 }

func (c *Catalog) defaultProvider() (string, error) {
	if c.Default != "" {
		if _, ok := c.providers[c.Default]; !ok {
			return "", fmt.Errorf("default provider %q is not configured (configured: %s)", c.Default, strings.Join(c.Providers(), ", "))
		}
		return c.Default, nil
	}
	for _, n := range []string{"anthropic", "openrouter", "openai"} {
		if _, ok := c.providers[n]; ok {
			return n, nil
		}
	}
	if names := c.Providers(); len(names) > 0 {
		return names[0], nil
	}
	return "", ErrNoProvider
}

// Resolve turns a model name the operator gave into a Model (ResolveAs
// with NamedByOperator).
func (c *Catalog) Resolve(name string) (Model, error) {
	return c.ResolveAs(name, NamedByOperator)
}

// resolve turns a model name into a Model and reports whether the name
// was an alias.
func (c *Catalog) resolve(name string) (Model, bool, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return Model{}, false, errors.New("empty model name")
	}
	provName, id, hasProvider := strings.Cut(name, "/")
	if !hasProvider || c.providers[provName] == nil && !isKnownProvider(provName) {
		def, err := c.defaultProvider()
		if err != nil {
			return Model{}, false, fmt.Errorf("resolve model %q: %w", name, err)
		}
		if err := checkUnknownProvider(name, provName, hasProvider, def); err != nil {
			return Model{}, false, err
		}
		provName, id = def, name
	}
	p, ok := c.providers[provName]
	if !ok {
		return Model{}, false, fmt.Errorf("resolve model %q: provider %q is not configured (configured: %s)", name, provName, strings.Join(c.Providers(), ", "))
	}
	viaAlias := false
	if real, ok := c.aliases[provName][id]; ok {
		id, viaAlias = real, true
	} else if isAlias(id, DefaultAliases) {
		return Model{}, false, fmt.Errorf("resolve model %q: provider %s has no model for the alias %s: set AVA_MODEL=%s/<model>, or name one under aliases: %s: in config.yaml",
			name, provName, id, provName, provName)
	}
	if id == "" {
		return Model{}, false, fmt.Errorf("resolve model %q: no model ID after the provider", name)
	}
	price, priced := c.prices.Lookup(provName, id)
	return Model{Provider: p, ID: id, Price: price, Priced: priced, Images: TakesImages(p, id)}, viaAlias, nil
}

// KnownProviders are the providers Ava has backends for, as named in
// model names.
var KnownProviders = []string{"anthropic", "openai", "openrouter", "scripted"}

// CheckModelName reports whether name is a model name a person may give:
// "provider/model" (the model part may hold slashes) or an alias, either
// a built-in one (haiku, sonnet, opus) or one in custom (provider →
// alias → model ID). Anything else is refused with an error that lists
// the providers, instead of being sent to the default provider as a
// model ID.
func CheckModelName(name string, custom map[string]map[string]string) error {
	name = strings.TrimSpace(name)
	if prov, id, ok := strings.Cut(name, "/"); ok && prov != "" && id != "" {
		return nil
	}
	if isAlias(name, DefaultAliases) || isAlias(name, custom) {
		return nil
	}
	return fmt.Errorf("model %q is not provider/model (e.g. anthropic/sonnet, openai/llama3.2, scripted/demo) or an alias (haiku, sonnet, opus); providers: %s",
		name, strings.Join(KnownProviders, ", "))
}

// isAlias reports whether name is an alias of any provider in aliases.
func isAlias(name string, aliases map[string]map[string]string) bool {
	for _, m := range aliases {
		if _, ok := m[name]; ok && name != "" {
			return true
		}
	}
	return false
}

func isKnownProvider(name string) bool { return slices.Contains(KnownProviders, name) }

// checkUnknownProvider refuses a provider/model name whose provider is
// none Ava knows when it reads as a typo of one (anthorpic/sonnet), or
// when the default provider it would go to is the offline scripted
// model: only a scripted/ prefix names a script. Otherwise the whole
// name is a model ID of the default provider (an OpenRouter or
// OpenAI-compatible ID such as meta-llama/llama-3.3-70b).
func checkUnknownProvider(name, prov string, hasProvider bool, def string) error {
	if !hasProvider {
		return nil
	}
	known := strings.Join(KnownProviders, ", ")
	if prov == "" {
		return fmt.Errorf("model %q: a path is not a model name: give provider/model (providers: %s); a script is named scripted/<path>", name, known)
	}
	if near := closestProvider(prov); near != "" {
		return fmt.Errorf("model %q: unknown provider %q: did you mean %s/…? (known providers: %s)", name, prov, near, known)
	}
	if def == "scripted" {
		return fmt.Errorf("model %q: unknown provider %q (known providers: %s); only a scripted/ prefix names an offline script", name, prov, known)
	}
	return nil
}

// closestProvider is the known provider within two edits of name, or "".
func closestProvider(name string) string { return closest.Match(name, KnownProviders, 2) }

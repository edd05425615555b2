package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
)

type fakeProvider struct {
	name  string
	errs  []error
	calls int
}

func (f *fakeProvider) Name() string { return f.name }
func (f *fakeProvider) Stream(ctx context.Context, req *llm.Request, on func(llm.Delta)) (*llm.Response, error) {
	f.calls++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		on(llm.Delta{Type: llm.DeltaText, Text: "partial"})
		return nil, err
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("ok")}}}, nil
}

func TestRetryHonoursRetryAfterAndResets(t *testing.T) {
	p := &fakeProvider{name: "x", errs: []error{&llm.APIError{StatusCode: 429, RetryAfter: 30 * time.Millisecond}, llm.ErrStreamCut}}
	r := llm.WithRetry(p, llm.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: time.Second})
	var resets int
	start := time.Now()
	resp, err := r.Stream(context.Background(), &llm.Request{}, func(d llm.Delta) {
		if d.Type == llm.DeltaReset {
			resets++
		}
	})
	if err != nil || resp.Message.TextContent() != "ok" || p.calls != 3 || resets != 2 {
		t.Fatalf("err %v calls %d resets %d", err, p.calls, resets)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Fatal("Retry-After not honoured")
	}
}

func TestRetryGivesUpAndSkipsPermanentErrors(t *testing.T) {
	p := &fakeProvider{name: "x", errs: []error{&llm.APIError{StatusCode: 400}}}
	_, err := llm.WithRetry(p, llm.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}).Stream(context.Background(), &llm.Request{}, func(llm.Delta) {})
	if err == nil || p.calls != 1 {
		t.Fatalf("400 retried: calls %d", p.calls)
	}
	p = &fakeProvider{name: "x", errs: []error{llm.ErrStreamCut, llm.ErrStreamCut, llm.ErrStreamCut}}
	_, err = llm.WithRetry(p, llm.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}).Stream(context.Background(), &llm.Request{}, func(llm.Delta) {})
	if !errors.Is(err, llm.ErrStreamCut) || p.calls != 3 {
		t.Fatalf("err %v calls %d", err, p.calls)
	}
}

func TestRetryWaitStopsOnCancel(t *testing.T) {
	p := &fakeProvider{name: "x", errs: []error{&llm.APIError{StatusCode: 503, RetryAfter: time.Hour}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := llm.WithRetry(p, llm.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Hour}).Stream(ctx, &llm.Request{}, func(llm.Delta) {})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func TestCatalogResolve(t *testing.T) {
	cat := llm.NewCatalog(llm.DefaultPrices)
	cat.Add(&fakeProvider{name: "anthropic"}, nil)
	cat.Add(&fakeProvider{name: "openrouter"}, nil)
	cases := map[string]string{
		"sonnet":                               "anthropic/claude-sonnet-4-5",
		"anthropic/haiku":                      "anthropic/claude-haiku-4-5",
		"openrouter/opus":                      "openrouter/anthropic/claude-opus-4.5",
		"openrouter/meta-llama/llama-3.3-70b":  "openrouter/meta-llama/llama-3.3-70b",
		"claude-3-5-haiku-20241022":            "anthropic/claude-3-5-haiku-20241022",
		"anthropic/claude-sonnet-4-5-20250929": "anthropic/claude-sonnet-4-5-20250929",
	}
	for in, want := range cases {
		m, err := cat.Resolve(in)
		if err != nil || m.Name() != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, m.Name(), err, want)
		}
		if !m.Priced && in != "openrouter/meta-llama/llama-3.3-70b" {
			t.Errorf("Resolve(%q): no price", in)
		}
	}
	if _, err := cat.Resolve("openai/gpt-5"); err == nil {
		t.Error("an unconfigured provider resolved")
	}
}

func TestPriceCost(t *testing.T) {
	p, ok := llm.DefaultPrices.Lookup("openrouter", "anthropic/claude-sonnet-4.5")
	if !ok {
		t.Fatal("no price for OpenRouter's sonnet name")
	}
	// 1M input + 1M output tokens of Sonnet 4.5 cost $3 + $15.
	if got := p.Cost(llm.Usage{InputTokens: 1e6, OutputTokens: 1e6}); got != 1800 {
		t.Fatalf("cost %v cents, want 1800", got)
	}
}

func TestCheckModelName(t *testing.T) {
	custom := map[string]map[string]string{"openai": {"fast": "llama3.2"}}
	for _, ok := range []string{"anthropic/sonnet", "openai/llama3.2", "openrouter/meta-llama/llama-3.3-70b", "scripted/demo",
		"scripted/path/to/script.yaml", "haiku", "sonnet", "opus", "fast"} {
		if err := llm.CheckModelName(ok, custom); err != nil {
			t.Errorf("CheckModelName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"bogus", "", "/x", "openai/", "gpt-5", "fast2"} {
		err := llm.CheckModelName(bad, custom)
		if err == nil || !strings.Contains(err.Error(), "is not provider/model") ||
			!strings.Contains(err.Error(), "providers: anthropic, openai, openrouter, scripted") {
			t.Errorf("CheckModelName(%q) = %v, want a refusal listing the providers", bad, err)
		}
	}
}

// A provider without a model for a built-in alias says so, instead of
// sending the alias to the server as a model ID.
func TestCatalogAliasWithoutModel(t *testing.T) {
	cat := llm.NewCatalog(llm.DefaultPrices)
	cat.Add(&fakeProvider{name: "openai"}, map[string]string{})
	_, err := cat.Resolve("haiku")
	if err == nil || !strings.Contains(err.Error(), "provider openai has no model for the alias haiku") {
		t.Fatalf("Resolve(haiku) = %v", err)
	}
	if m, err := cat.Resolve("openai/llama3.2"); err != nil || m.Name() != "openai/llama3.2" {
		t.Fatalf("Resolve(openai/llama3.2) = %v, %v", m.Name(), err)
	}
}

// TestSearchPrices: OpenAI's models price a web_search call at 1¢; on
// OpenRouter a search is its web plugin's 2¢ whatever the model (even a
// Claude model, whose own per_search is Anthropic's), unless a price
// keyed by the full name gives its own.
func TestSearchPrices(t *testing.T) {
	for _, tc := range []struct {
		prices          llm.Prices
		provider, model string
		want            float64
	}{
		{llm.DefaultPrices, "openai", "gpt-4.1", llm.OpenAISearchCents},
		{llm.DefaultPrices, "openai", "gpt-5-mini", 1},
		{llm.DefaultPrices, "anthropic", "claude-sonnet-4-5", 1},
		{llm.DefaultPrices, "openrouter", "anthropic/claude-sonnet-4.5", 2},
		{llm.DefaultPrices, "openrouter", "openai/gpt-4o", 2},
		{llm.DefaultPrices.Merge(llm.Prices{"openrouter/openai/gpt-4o": {Input: 1, PerSearch: 3}}), "openrouter", "openai/gpt-4o", 3},
	} {
		p, _ := tc.prices.Lookup(tc.provider, tc.model)
		if p.PerSearch != tc.want {
			t.Errorf("%s/%s: per search %v¢, want %v¢", tc.provider, tc.model, p.PerSearch, tc.want)
		}
	}
}

// TestServerOf: a provider that calls no server names none; one that
// does names its host and port (the scheme's when the URL has none),
// through any wrapper.
func TestServerOf(t *testing.T) {
	if host, port := llm.ServerOf(llm.WithRetry(&fakeProvider{name: "x"}, llm.DefaultRetryPolicy)); host != "" || port != 0 {
		t.Errorf("a provider without a server: %q %d", host, port)
	}
	for raw, want := range map[string]string{
		"https://api.example.com/v1": "api.example.com 443",
		"http://localhost:11434/v1":  "localhost 11434",
		"http://[::1]/v1":            "::1 80",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		host, port := llm.ServerOf(llm.WithRetry(&endpointProvider{base: u}, llm.DefaultRetryPolicy))
		if got := fmt.Sprintf("%s %d", host, port); got != want {
			t.Errorf("%s: %s, want %s", raw, got, want)
		}
	}
	if got := (llm.Usage{InputTokens: 200, CacheReadTokens: 800, CacheWriteTokens: 50, OutputTokens: 9}).AllInputTokens(); got != 1050 {
		t.Errorf("all input tokens %d, want 1050", got)
	}
}

// endpointProvider is a provider that calls a server at base.
type endpointProvider struct {
	fakeProvider
	base *url.URL
}

func (e *endpointProvider) BaseURL() *url.URL { return e.base }

// A typo in a provider is refused with the closest known one, never sent
// on as a model ID; with the offline model the default, only scripted/
// names a script; a slashed ID of the default provider still resolves
// (issue 42 item 2).
func TestUnknownProviderIsRefused(t *testing.T) {
	cat := llm.NewCatalog(llm.DefaultPrices)
	cat.Add(&fakeProvider{name: "openrouter"}, nil)
	if _, err := cat.Resolve("anthorpic/sonnet"); err == nil || !strings.Contains(err.Error(), "did you mean anthropic/") {
		t.Errorf("anthorpic/sonnet: %v", err)
	}
	if m, err := cat.Resolve("meta-llama/llama-3.3-70b"); err != nil || m.Name() != "openrouter/meta-llama/llama-3.3-70b" {
		t.Errorf("an OpenRouter ID with a slash: %q %v", m.Name(), err)
	}
	offline := llm.NewCatalog(llm.DefaultPrices)
	offline.Add(&fakeProvider{name: "scripted"}, nil)
	if _, err := offline.Resolve("mymodels/demo.yaml"); err == nil || !strings.Contains(err.Error(), "only a scripted/ prefix") {
		t.Errorf("an unknown provider with the offline model as default: %v", err)
	}
	if m, err := offline.Resolve("scripted/demo"); err != nil || m.Name() != "scripted/demo" {
		t.Errorf("scripted/demo: %q %v", m.Name(), err)
	}
}

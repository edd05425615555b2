// Package web holds Ava's web tools: web_search (SearXNG, Brave or Tavily,
// chosen by configuration), http_get (one URL) and read_webpages (several
// URLs fetched concurrently). Pages come back as readable Markdown of their
// main content; other text comes back as text; binary content is refused.
//
// Fetches are guarded: only http and https, a bounded response size,
// redirect count and time per request, and no connections to private,
// loopback, link-local, unspecified or multicast addresses unless
// Config.AllowPrivate is set. The address check runs at dial time on the
// resolved IP, so a hostname that resolves to a private address (DNS
// rebinding) and a redirect to one are refused too. The search backends are
// configured by the operator, not chosen by the model, so they are trusted
// and may live on a private network (a self-hosted SearXNG).
//
// A fetch or search that fails is an error Result for the model. A Go
// error is returned only when the caller's context ends: the call was
// cancelled, not failed.
package web

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/avaagent/ava/tool"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultTimeout      = 20 * time.Second
	DefaultMaxBytes     = 5 << 20
	DefaultMaxOutput    = 20000
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "Mozilla/5.0 (compatible; Ava/1.0; +https://github.com/avaagent/ava)"
	// DefaultBraveBaseURL is the Brave Search API endpoint.
	DefaultBraveBaseURL = "https://api.search.brave.com"
	// DefaultTavilyBaseURL is the Tavily API endpoint.
	DefaultTavilyBaseURL = "https://api.tavily.com"
)

// The settings' environment variables, named in the tools' messages;
// package config reads them (and their config.yaml keys, web.*).
const (
	EnvSearXNGURL    = "AVA_SEARXNG_URL"
	EnvBraveAPIKey   = "BRAVE_API_KEY"
	EnvBraveBaseURL  = "AVA_BRAVE_BASE_URL"
	EnvTavilyAPIKey  = "TAVILY_API_KEY"
	EnvTavilyBaseURL = "AVA_TAVILY_BASE_URL"
	EnvAllowPrivate  = "AVA_WEB_ALLOW_PRIVATE"
)

// Config configures the web tools. Zero fields take the defaults above.
type Config struct {
	// SearXNGURL is the base URL of a SearXNG instance with the json
	// format enabled ("http://localhost:8888").
	SearXNGURL string
	// BraveAPIKey enables the Brave Search API backend.
	BraveAPIKey string
	// BraveBaseURL overrides DefaultBraveBaseURL (tests, proxies).
	BraveBaseURL string
	// TavilyAPIKey enables the Tavily backend.
	TavilyAPIKey string
	// TavilyBaseURL overrides DefaultTavilyBaseURL.
	TavilyBaseURL string
	// SearchOff, when set, is why web_search has no backend on purpose
	// (the web_search setting is off, or the provider's): the tool
	// answers with it instead of "not configured".
	SearchOff string
	// AllowPrivate lets http_get and read_webpages reach private,
	// loopback and link-local addresses.
	AllowPrivate bool
	// Timeout bounds each request, body included.
	Timeout time.Duration
	// MaxBytes is how much of a response body is read.
	MaxBytes int64
	// MaxOutput is how many bytes of text one page (or one search) may
	// give the model; the rest is cut with a note saying where.
	MaxOutput int
	// MaxRedirects is how many redirects a fetch follows; negative means
	// none.
	MaxRedirects int
	// UserAgent is sent with every request.
	UserAgent string
	// HTTPClient, if set, replaces the built-in clients (tests). Its
	// transport then decides where connections go: the dial-time address
	// guard is not installed, only the check of literal IPs in URLs.
	HTTPClient *http.Client
	// Logger receives debug logs; nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.MaxRedirects == 0 {
		c.MaxRedirects = DefaultMaxRedirects
	} else if c.MaxRedirects < 0 {
		c.MaxRedirects = 0
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.BraveBaseURL == "" {
		c.BraveBaseURL = DefaultBraveBaseURL
	}
	if c.TavilyBaseURL == "" {
		c.TavilyBaseURL = DefaultTavilyBaseURL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Tools builds the web tools from one configuration. It is safe for
// concurrent use.
type Tools struct {
	cfg Config
	// guard refuses an address the fetch client may not dial; nil when
	// private addresses are allowed.
	guard func(netip.Addr) error
	// fetchClient fetches model-chosen URLs: guarded dialer, redirect
	// limit.
	fetchClient *http.Client
	// searchClient talks to the configured search backends.
	searchClient *http.Client
}

// New returns the web tools for cfg.
func New(cfg Config) *Tools {
	return newTools(cfg, checkPublic)
}

// newTools lets tests choose which addresses are refused.
func newTools(cfg Config, guard func(netip.Addr) error) *Tools {
	cfg = cfg.withDefaults()
	t := &Tools{cfg: cfg}
	if !cfg.AllowPrivate {
		t.guard = guard
	}
	if cfg.HTTPClient != nil {
		fc := *cfg.HTTPClient
		fc.CheckRedirect = t.checkRedirect
		t.fetchClient = &fc
		t.searchClient = cfg.HTTPClient
		return t
	}
	t.fetchClient = &http.Client{
		Transport:     newTransport(t.guardedDialer()),
		CheckRedirect: t.checkRedirect,
	}
	t.searchClient = &http.Client{Transport: newTransport(&net.Dialer{Timeout: cfg.Timeout})}
	return t
}

// newTransport returns a transport that ignores proxy settings (a proxy
// would dial on our behalf, around the address guard) and keeps no idle
// connections, so nothing outlives a call.
func newTransport(d *net.Dialer) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		DisableKeepAlives:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// Search returns the web_search tool.
func (t *Tools) Search() tool.Tool { return t.searchTool() }

// HTTPGet returns the http_get tool.
func (t *Tools) HTTPGet() tool.Tool { return t.httpGetTool() }

// ReadWebpages returns the read_webpages tool.
func (t *Tools) ReadWebpages() tool.Tool { return t.readWebpagesTool() }

// All returns every web tool.
func (t *Tools) All() []tool.Tool {
	return []tool.Tool{t.Search(), t.HTTPGet(), t.ReadWebpages()}
}

// Package openai is the llm.Provider for OpenAI-compatible chat completions
// endpoints: OpenAI itself, OpenRouter, Ollama, vLLM and the llama.cpp
// server, and for OpenAI's Responses API when a request offers OpenAI's
// web search. It talks through the official SDK
// (github.com/openai/openai-go/v3) and always streams. For chat
// completions the SDK sends the request, maps error answers and splits
// the event stream, but the body is written directly (chatjson.go) and
// the chunks are decoded into a struct of the fields read (chatChunk):
// the SDK's reflection cost more CPU than the rest of a call.
//
// Wire choices, stated once:
//
//   - Tool results, which llm carries in user messages, become separate
//     "tool" role messages placed before any text of the same user message
//     (they must follow the assistant's tool_calls directly). A failed
//     result's content is prefixed with "ERROR: " so the model knows.
//   - Thinking blocks are dropped when sending: this wire has no field for
//     them. Reasoning streamed back in a non-standard "reasoning_content"
//     (DeepSeek, vLLM) or "reasoning" (OpenRouter) delta field is kept as a
//     thinking block and DeltaThinking deltas.
//   - The output cap (Request.MaxTokens, else Config.MaxTokens) is sent only
//     when positive: as max_completion_tokens to api.openai.com, which
//     rejects max_tokens for reasoning models, and as max_tokens everywhere
//     else, because that is the field every compatible server understands.
//   - Usage is requested in the stream (stream_options.include_usage).
//     Cached prompt tokens (prompt_tokens_details.cached_tokens) become
//     CacheReadTokens and cache writes (cache_write_tokens, as OpenRouter
//     reports them) CacheWriteTokens; both are subtracted from InputTokens
//     so that Usage.Total counts each token once.
//   - The SDK never retries (llm.WithRetry does) and ignores the OPENAI_*
//     environment variables: the caller passes everything in Config.
//   - The provider's own web search (llm.Request.ServerTools) depends on
//     what the caller says the endpoint is (Config.ServerSearch): on
//     OpenAI's own API the request goes through the Responses API
//     (responses.go); on OpenRouter's it carries the web plugin
//     (openrouter.go); elsewhere it is ignored.
package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/avaagent/ava/llm"
)

// Default base URLs.
const (
	OpenAIBaseURL     = "https://api.openai.com/v1"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
)

// Config configures a Provider.
type Config struct {
	// Name is the provider's name in model names ("openai", "openrouter");
	// default "openai".
	Name string
	// APIKey is sent as a bearer token. It may be empty only when BaseURL
	// is set (a local server such as Ollama needs none).
	APIKey string
	// BaseURL is the API root, with or without "/v1" as the server wants
	// (Ollama: "http://localhost:11434/v1"). Empty means OpenAI's, or
	// OpenRouter's when Name is "openrouter".
	BaseURL string
	// HTTPClient sends the requests; nil uses a private client without a
	// body timeout (streams are bounded by the context).
	HTTPClient *http.Client
	// MaxTokens caps a response's output tokens when the request sets no
	// cap; zero sends no cap, leaving the server's default.
	MaxTokens int
	// Headers are added to every request (OpenRouter's HTTP-Referer and
	// X-Title, a gateway's own headers).
	Headers map[string]string
	// Logger receives debug records; nil discards them.
	Logger *slog.Logger
	// ServerSearch is the web search the endpoint runs on its side, used
	// when a request offers the provider's search (llm.Request.ServerTools):
	// SearchNone (the default: server tools are ignored), SearchResponses
	// (OpenAI's own API) or SearchWebPlugin (OpenRouter's). The caller
	// says which the endpoint is; the host name is not looked at, so that
	// a test's server on loopback can stand for either.
	ServerSearch ServerSearch
}

// ServerSearch is how an endpoint runs a web search on its side.
type ServerSearch int

// The endpoints' own web searches.
const (
	// SearchNone: the endpoint has none (a compatible server).
	SearchNone ServerSearch = iota
	// SearchResponses: OpenAI's web_search tool, through the Responses
	// API; requests without it stay on chat completions.
	SearchResponses
	// SearchWebPlugin: OpenRouter's web plugin on chat completions.
	SearchWebPlugin
)

// Provider streams chat completions. It is safe for concurrent use.
type Provider struct {
	name string
	// base is the API root (BaseURL).
	base *url.URL
	// opts are the SDK's options for every request: the chat
	// completions requests, whose bodies are written directly
	// (chatBody), are posted with them (newStream).
	opts                []option.RequestOption
	responses           responses.ResponseService
	search              ServerSearch
	httpClient          *http.Client
	maxTokens           int
	maxCompletionTokens bool
	log                 *slog.Logger
	// key is the API key, masked in the error texts the server sends
	// back (llm.ErrorText).
	key string
}

var _ llm.Provider = (*Provider)(nil)

// New validates cfg and returns a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	if strings.ContainsAny(cfg.Name, "/ ") {
		return nil, fmt.Errorf("openai provider: name %q must not contain '/' or spaces", cfg.Name)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("openai provider %s: MaxTokens is negative (%d)", cfg.Name, cfg.MaxTokens)
	}
	base, err := baseURL(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, fmt.Errorf("openai provider %s: APIKey is empty (a key may be omitted only with an explicit BaseURL, for a local server)", cfg.Name)
	}
	p := &Provider{
		name:       cfg.Name,
		base:       base,
		httpClient: cfg.HTTPClient,
		maxTokens:  cfg.MaxTokens,
		// Only OpenAI itself insists on the newer field: its host, or an
		// endpoint the caller says is OpenAI's (a proxy of it).
		maxCompletionTokens: base.Host == "api.openai.com" || cfg.ServerSearch == SearchResponses,
		log:                 cfg.Logger,
		key:                 cfg.APIKey,
		search:              cfg.ServerSearch,
	}
	if p.httpClient == nil {
		p.httpClient = defaultHTTPClient()
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.log = p.log.With("provider", cfg.Name)
	opts := []option.RequestOption{
		option.WithHTTPClient(p.httpClient),
		option.WithBaseURL(base.String()),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithMiddleware(observe),
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	// A bare service, not openai.NewClient: the client would read
	// OPENAI_BASE_URL, OPENAI_ORG_ID and friends from the environment.
	p.opts = opts
	p.responses = responses.NewResponseService(opts...)
	return p, nil
}

// baseURL returns the configured or default API root, checked.
func baseURL(cfg Config) (*url.URL, error) {
	raw := cfg.BaseURL
	if raw == "" {
		raw = OpenAIBaseURL
		if cfg.Name == "openrouter" {
			raw = OpenRouterBaseURL
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("openai provider %s: BaseURL %q: %w", cfg.Name, raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai provider %s: BaseURL %q must be an absolute http or https URL", cfg.Name, raw)
	}
	return u, nil
}

// defaultHTTPClient clones the default transport with a bound on the wait
// for response headers, so a server that accepts and never answers fails.
// The response body has no timeout: the context bounds a stream.
func defaultHTTPClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// drainWait bounds how long closing a finished stream may wait for the
// end of its body.
const drainWait = 100 * time.Millisecond

// Name is the provider's name as used in model names.
func (p *Provider) Name() string { return p.name }

// BaseURL is the API root requests go to (llm.Endpoint): Config.BaseURL,
// or the provider's public one.
func (p *Provider) BaseURL() *url.URL {
	u := *p.base
	return &u
}

// CloseIdleConnections closes the HTTP client's idle keep-alive
// connections, stopping their goroutines. The Provider stays usable.
func (p *Provider) CloseIdleConnections() { p.httpClient.CloseIdleConnections() }

// Stream sends req as a streaming chat completion, calls onDelta for each
// piece of text, reasoning and each new tool call, and returns the whole
// turn. A done ctx aborts the HTTP stream at once and returns its cause.
//
// A request offering the provider's web search to OpenAI's own endpoint
// goes through the Responses API instead (streamResponses); to
// OpenRouter's, it carries the web plugin (webPlugin).
// closeDraining closes a stream, whose Close drains what is left of the
// body, cutting the drain short after drainWait (cancel is the stream's
// own context's).
func closeDraining(stream io.Closer, cancel context.CancelFunc) {
	t := time.AfterFunc(drainWait, cancel)
	stream.Close()
	t.Stop()
}

func (p *Provider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	if p.search == SearchResponses && req != nil && req.ServerTools != nil && req.ServerTools.WebSearch {
		return p.streamResponses(ctx, req, onDelta)
	}
	body, err := p.chatBody(req)
	if err != nil {
		return nil, fmt.Errorf("%s: build request: %w", p.name, err)
	}
	start := time.Now()
	ex := &exchange{}
	// The stream's own context lets Close's drain of a finished body be
	// cut short: a server that sends [DONE] but never ends the response
	// gets the connection closed after drainWait.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream := p.newStream(withExchange(sctx, ex), body)
	defer closeDraining(stream, cancel)

	acc := newAccumulator(onDelta)
	if p.webPlugin(req) {
		acc.plugin = p.name
	}
	for stream.Next() {
		acc.add(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return nil, fmt.Errorf("%s: stream %s: %w", p.name, req.Model, p.streamError(ctx, ex, err))
	}
	if !acc.finished && !ex.sawDone() {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: stream %s: %w", p.name, req.Model, ctxError(ctx))
		}
		return nil, fmt.Errorf("%s: stream %s ended without finish_reason or [DONE]: %w", p.name, req.Model, llm.ErrStreamCut)
	}
	resp := acc.response(req.Model)
	p.log.DebugContext(ctx, "chat completion streamed", "model", resp.Model, "stop", resp.StopReason,
		"input_tokens", resp.Usage.InputTokens, "output_tokens", resp.Usage.OutputTokens,
		"cache_read_tokens", resp.Usage.CacheReadTokens, "elapsed", time.Since(start))
	return resp, nil
}

// newStream posts a chat completions request body through the SDK, which
// sends it with its headers, authentication and middleware and maps an
// error answer, and returns the stream of its chunks, decoded into
// chatChunk (the SDK's own NewStreaming does the same with its params
// and ChatCompletionChunk).
func (p *Provider) newStream(ctx context.Context, body []byte) *ssestream.Stream[chatChunk] {
	var raw *http.Response
	// A client of options only, made here: a Provider holding an
	// openai.Client would keep every service of the SDK in the binary.
	c := openai.Client{Options: p.opts}
	err := c.Post(ctx, "chat/completions", body, &raw)
	return ssestream.NewStream[chatChunk](ssestream.NewDecoder(raw), err)
}

// newCallID makes an ID for a tool call the server sent without one (some
// local servers do), so that its result can still be linked to it.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// errNoModel is returned for a request without a model ID.
var errNoModel = errors.New("request has no model")

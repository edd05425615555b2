// Package anthropic is the llm.Provider for the Anthropic Messages API,
// built on the official SDK (github.com/anthropics/anthropic-sdk-go).
//
// Every call streams (POST /v1/messages with "stream": true). Text and
// thinking deltas reach onDelta as they arrive; the complete turn is
// assembled here rather than by the SDK so that a tool call whose arguments
// are not valid JSON keeps its raw text for the agent loop to report.
//
// The SDK's own retries are off: llm.WithRetry wraps this provider. Errors
// are classified for it: HTTP and in-stream API errors become
// *llm.APIError, a dropped or truncated stream wraps llm.ErrStreamCut, an
// unparsable event wraps llm.ErrMalformed, and a cancelled context returns
// its cause at once.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/avaagent/ava/llm"
)

// DefaultBaseURL is the public API's root, used when Config.BaseURL is
// empty.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens caps a response's output when neither the Request nor
// the Config says otherwise.
const DefaultMaxTokens = 8192

// Config configures a Provider.
type Config struct {
	// APIKey is sent as x-api-key. Required.
	APIKey string
	// BaseURL replaces https://api.anthropic.com (a proxy or gateway, as
	// set by ANTHROPIC_BASE_URL). Empty uses the public API.
	BaseURL string
	// HTTPClient sends the requests. Nil uses a client whose transport
	// bounds the wait for response headers but never the stream itself.
	HTTPClient *http.Client
	// MaxTokens is the default output cap; zero means DefaultMaxTokens.
	MaxTokens int
	// Logger receives debug records of each call. Nil discards them.
	Logger *slog.Logger
}

// Provider streams turns from the Anthropic Messages API. It is safe for
// concurrent use.
type Provider struct {
	client    anthropic.Client
	base      *url.URL
	maxTokens int
	log       *slog.Logger
	// key is the API key, masked in the error texts the server sends
	// back (llm.ErrorText).
	key string
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider for cfg. It does not read the environment: the
// caller passes the key and base URL it resolved.
func New(cfg Config) (*Provider, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("anthropic: Config.APIKey is empty (set ANTHROPIC_API_KEY)")
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: Config.MaxTokens is %d, want a positive number or zero for the default", cfg.MaxTokens)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithHTTPClient(httpClient(cfg.HTTPClient)),
	}
	base, err := url.Parse(DefaultBaseURL)
	if cfg.BaseURL != "" {
		if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
			return nil, fmt.Errorf("anthropic: Config.BaseURL %q is not an http(s) URL", cfg.BaseURL)
		}
		base, err = url.Parse(cfg.BaseURL)
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if err != nil {
		return nil, fmt.Errorf("anthropic: Config.BaseURL %q: %w", cfg.BaseURL, err)
	}
	p := &Provider{
		client:    anthropic.NewClient(opts...),
		base:      base,
		maxTokens: cfg.MaxTokens,
		log:       cfg.Logger,
		key:       cfg.APIKey,
	}
	if p.maxTokens == 0 {
		p.maxTokens = DefaultMaxTokens
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// httpClient returns c, or a default client: a stream may run for many
// minutes, so only the wait for response headers is bounded.
func httpClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

// Name returns "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// BaseURL is the API root requests go to (llm.Endpoint): Config.BaseURL,
// or DefaultBaseURL.
func (p *Provider) BaseURL() *url.URL {
	u := *p.base
	return &u
}

// Stream sends req as a streaming Messages request, calls onDelta for each
// text and thinking delta and each tool call start, and returns the
// complete turn. A done ctx aborts the HTTP stream at once and returns an
// error matching both ctx.Err() and its cause.
func (p *Provider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	start := time.Now()
	var httpResp *http.Response
	opts := append(requestOptions(req), option.WithResponseInto(&httpResp))
	stream := p.client.Messages.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	if err := stream.Err(); err != nil {
		return nil, requestError(ctx, err, p.key)
	}
	if err := checkEventStream(httpResp); err != nil {
		return nil, err
	}
	acc := newAccumulator(onDelta)
	for stream.Next() {
		if err := acc.add(stream.Current()); err != nil {
			return nil, fmt.Errorf("anthropic: %w: %w", llm.ErrMalformed, err)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, streamError(ctx, err, p.key)
	}
	if !acc.stopped {
		return nil, fmt.Errorf("anthropic: %w: stream ended without message_stop", llm.ErrStreamCut)
	}
	resp := acc.response()
	p.log.DebugContext(ctx, "anthropic turn",
		"model", resp.Model, "stop", resp.StopReason, "blocks", len(resp.Message.Content),
		"input_tokens", resp.Usage.InputTokens, "output_tokens", resp.Usage.OutputTokens,
		"cache_read", resp.Usage.CacheReadTokens, "cache_write", resp.Usage.CacheWriteTokens,
		"elapsed", time.Since(start))
	return resp, nil
}

// checkEventStream refuses a successful answer that is not an SSE stream,
// such as a proxy that ignored "stream": true.
func checkEventStream(resp *http.Response) error {
	if resp == nil {
		return nil
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "text/event-stream" {
		return fmt.Errorf("anthropic: %w: HTTP %d answer has Content-Type %q, want text/event-stream", llm.ErrMalformed, resp.StatusCode, ct)
	}
	return nil
}

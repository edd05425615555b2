package llm

import (
	"context"
	"time"
)

// RateLimit is a model's rate limit as the operator configures it
// (config.yaml's rate_limits:), for servers that send no rate-limit
// headers. A zero count is no limit on that dimension. Headers, when a
// server sends them, refine it (see package llm/ratelimit).
type RateLimit struct {
	// RPM is the requests allowed per Window.
	RPM int `json:"rpm" yaml:"rpm"`
	// InputTPM is the input tokens allowed per Window.
	InputTPM int `json:"input_tpm" yaml:"input_tpm"`
	// OutputTPM is the output tokens allowed per Window.
	OutputTPM int `json:"output_tpm" yaml:"output_tpm"`
	// Window is the period the counts are per; zero is a minute.
	Window time.Duration `json:"window,omitempty" yaml:"window"`
}

// Per returns the limit's window: Window, or a minute.
func (r RateLimit) Per() time.Duration {
	if r.Window > 0 {
		return r.Window
	}
	return time.Minute
}

// Zero reports whether r limits nothing.
func (r RateLimit) Zero() bool { return r.RPM <= 0 && r.InputTPM <= 0 && r.OutputTPM <= 0 }

// RateLimits maps model IDs (or provider/model names) to their
// configured limits, looked up as Prices are.
type RateLimits map[string]RateLimit

// Lookup finds the limit of provider/model by the rules of
// Prices.Lookup.
func (rs RateLimits) Lookup(provider, model string) (RateLimit, bool) {
	return lookupModel(rs, provider, model)
}

// WaitNotice is told that a model request is held back (by a rate
// limiter) for about wait; the request goes when the returned done is
// called. It lets the caller show the wait and keep it off the run's
// clock.
type WaitNotice func(wait time.Duration) (done func())

type waitNoticeKey struct{}

// WithWaitNotice returns ctx carrying f, for the providers that hold a
// request back.
func WithWaitNotice(ctx context.Context, f WaitNotice) context.Context {
	return context.WithValue(ctx, waitNoticeKey{}, f)
}

// NoticeWait tells ctx's WaitNotice, if any, that a request waits about
// wait, and returns what to call when the wait ends.
func NoticeWait(ctx context.Context, wait time.Duration) (done func()) {
	if f, ok := ctx.Value(waitNoticeKey{}).(WaitNotice); ok && f != nil {
		if d := f(wait); d != nil {
			return d
		}
	}
	return func() {}
}

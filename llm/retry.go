package llm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds how transient failures are retried.
type RetryPolicy struct {
	// MaxRetries is how many times a failed call is tried again.
	MaxRetries int
	// BaseDelay is the first backoff; each retry doubles it.
	BaseDelay time.Duration
	// MaxDelay caps one wait, including a server's Retry-After.
	MaxDelay time.Duration
}

// DefaultRetryPolicy retries four times, from 500 ms up to 30 s.
var DefaultRetryPolicy = RetryPolicy{MaxRetries: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second}

// delay returns the wait before retry number attempt (1-based): the
// server's Retry-After when it gave one, else exponential backoff with full
// jitter in [d/2, d].
func (p RetryPolicy) delay(attempt int, err error) time.Duration {
	if ra := retryAfter(err); ra > 0 {
		return min(ra, p.MaxDelay)
	}
	d := p.BaseDelay << (attempt - 1)
	if d <= 0 || d > p.MaxDelay {
		d = p.MaxDelay
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// WithRetry wraps p so that transient failures (see IsRetryable) are
// retried under policy. Before each retry onDelta receives a DeltaReset:
// whatever the failed attempt streamed is void. A done ctx stops the wait
// at once.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	return &retrying{Provider: p, policy: policy}
}

type retrying struct {
	Provider
	policy RetryPolicy
}

// Unwrap returns the provider the policy retries.
func (r *retrying) Unwrap() Provider { return r.Provider }

func (r *retrying) Stream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := r.Provider.Stream(ctx, req, onDelta)
		if err == nil || !IsRetryable(err) || attempt >= r.policy.MaxRetries || ctx.Err() != nil {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("after %d retries: %w", attempt, err)
			}
			return resp, err
		}
		if onDelta != nil {
			onDelta(Delta{Type: DeltaReset, Attempt: attempt + 1, Err: err})
		}
		t := time.NewTimer(r.policy.delay(attempt+1, err))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
	}
}

package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// IdempotencyKeyHeader is the request header that makes a spawn safe to
// send again: the daemon records the key with the subagent (or the
// proposal) it made and answers a repeat with it (docs/api.md).
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotentReplayedHeader is set ("true") on the answer to a repeated
// request: what the first request made, not made again.
const IdempotentReplayedHeader = "Idempotent-Replayed"

// Retries of a call that is safe to repeat (one with an idempotency
// key): how many attempts in all, and the longest wait between two.
const (
	maxAttempts = 4
	maxBackoff  = 5 * time.Second
)

// NewIdempotencyKey draws a random idempotency key (32 hex characters).
func NewIdempotencyKey() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw an idempotency key: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// retry calls attempt until it succeeds, fails for good, maxAttempts
// have been made or ctx is done. It tries again after a 503 (waiting
// its Retry-After, at most maxBackoff) and after a connection that
// failed once the daemon was reached; never when no daemon answers at
// all (ErrNoDaemon). attempt must be safe to repeat.
func (c *Client) retry(ctx context.Context, attempt func() error) error {
	var err error
	for n := 1; ; n++ {
		err = attempt()
		wait, again := retryable(err)
		if !again || n == maxAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// retryable reports whether err may go away on a repeat, and how long
// to wait first.
func retryable(err error) (time.Duration, bool) {
	var ae *APIError
	switch {
	case err == nil, errors.Is(err, ErrNoDaemon), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return 0, false
	case errors.As(err, &ae):
		if ae.StatusCode != http.StatusServiceUnavailable {
			return 0, false
		}
		return min(max(ae.RetryAfter, 100*time.Millisecond), maxBackoff), true
	}
	return 500 * time.Millisecond, true // the connection broke mid-request
}

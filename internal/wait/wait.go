// Package wait holds the one context-aware sleep the background loops
// (polling, reconnecting, backing off) share.
package wait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Backoff bounds the pauses of Retry: the first, and the most any
// pause grows to (it doubles).
const (
	FirstBackoff = 50 * time.Millisecond
	MaxBackoff   = 2 * time.Second
)

// Retry calls fn until it succeeds, fails with an error final reports
// as final (nil: none is), ctx is done, or bound has passed since the
// first call (0: no bound), pausing between calls with a growing backoff.
// It returns fn's last error. A store write rides out a short outage
// (a database restart, a disk briefly full) this way instead of failing
// the run that made it.
func Retry(ctx context.Context, bound time.Duration, final func(error) bool, fn func(ctx context.Context) error) error {
	start := time.Now()
	pause := FirstBackoff
	for {
		err := fn(ctx)
		if err == nil || (final != nil && final(err)) || ctx.Err() != nil {
			return err
		}
		if bound > 0 && time.Since(start)+pause > bound {
			return err
		}
		if !Sleep(ctx, pause) {
			return err
		}
		pause = min(2*pause, MaxBackoff)
	}
}

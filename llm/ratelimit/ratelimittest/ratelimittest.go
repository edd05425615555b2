// Package ratelimittest is the one test suite every ratelimit.Backend
// passes (the in-process one and the cluster's on PostgreSQL), so that
// they pace alike.
package ratelimittest

import (
	"context"
	"testing"
	"time"

	"github.com/avaagent/ava/llm/ratelimit"
)

// one is the cost of a request with no tokens.
var one = ratelimit.Amounts{ratelimit.Requests: 1}

// Run runs the suite; open returns a fresh backend (each subtest uses
// keys of its own).
func Run(t *testing.T, open func(t *testing.T) ratelimit.Backend) {
	ctx := context.Background()
	take := func(t *testing.T, b ratelimit.Backend, key string, cost ratelimit.Amounts) time.Duration {
		t.Helper()
		d, err := b.Take(ctx, key, cost)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	learn := func(t *testing.T, b ratelimit.Backend, key string, obs ...ratelimit.Observation) {
		t.Helper()
		if err := b.Learn(ctx, key, obs); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("UnknownKeyNeverWaits", func(t *testing.T) {
		b := open(t)
		for range 5 {
			if d := take(t, b, "unknown", ratelimit.Amounts{1, 1e6, 1e6, 2e6}); d != 0 {
				t.Fatalf("wait %s on a key nothing is known of", d)
			}
		}
	})
	t.Run("QueuesPastTheLimit", func(t *testing.T) {
		b := open(t)
		// 3 a minute: the fourth request waits its 20 s, the fifth 40 s.
		learn(t, b, "k", ratelimit.Observation{Dim: ratelimit.Requests, Limit: 3, Remaining: -1})
		for i := range 3 {
			if d := take(t, b, "k", one); d != 0 {
				t.Fatalf("request %d waits %s within the limit", i+1, d)
			}
		}
		if d := take(t, b, "k", one); d < 15*time.Second || d > 21*time.Second {
			t.Errorf("fourth request waits %s, want about 20 s", d)
		}
		if d := take(t, b, "k", one); d < 35*time.Second || d > 41*time.Second {
			t.Errorf("fifth request waits %s, want about 40 s (queued behind the fourth)", d)
		}
	})
	t.Run("ServerRemainingAndRate", func(t *testing.T) {
		b := open(t)
		learn(t, b, "k", ratelimit.Observation{Dim: ratelimit.Requests, Limit: 100, Remaining: 0, Rate: 10})
		if d := take(t, b, "k", one); d < 50*time.Millisecond || d > 150*time.Millisecond {
			t.Errorf("wait %s with nothing left at 10 a second, want about 100 ms", d)
		}
		// A later answer that says more is left does not raise the level.
		learn(t, b, "k", ratelimit.Observation{Dim: ratelimit.Requests, Limit: 100, Remaining: 50, Rate: 10})
		if d := take(t, b, "k", one); d < 100*time.Millisecond {
			t.Errorf("wait %s: a stale remaining raised the level", d)
		}
	})
	t.Run("TokensGivenBack", func(t *testing.T) {
		b := open(t)
		learn(t, b, "k", ratelimit.Observation{Dim: ratelimit.OutputTokens, Limit: 1000, Remaining: -1, Rate: 1})
		if d := take(t, b, "k", ratelimit.Amounts{ratelimit.OutputTokens: 1000}); d != 0 {
			t.Fatalf("first request waits %s", d)
		}
		if err := b.Give(ctx, "k", ratelimit.Amounts{ratelimit.OutputTokens: 900}); err != nil {
			t.Fatal(err)
		}
		if d := take(t, b, "k", ratelimit.Amounts{ratelimit.OutputTokens: 800}); d != 0 {
			t.Errorf("wait %s after 900 of 1000 tokens were given back", d)
		}
		if d := take(t, b, "k", ratelimit.Amounts{ratelimit.OutputTokens: 5000}); d < 500*time.Second {
			t.Errorf("a request over the whole limit waits %s, want until the bucket is full (~900 s)", d)
		}
	})
	t.Run("BlockHoldsEveryRequest", func(t *testing.T) {
		b := open(t)
		learn(t, b, "k", ratelimit.Observation{Dim: ratelimit.Requests, Remaining: -1, Block: 5 * time.Second})
		if d := take(t, b, "k", one); d < 4*time.Second || d > 5*time.Second {
			t.Errorf("wait %s under a 5 s block", d)
		}
		if d := take(t, b, "other", one); d != 0 {
			t.Errorf("another key waits %s", d)
		}
	})
	t.Run("CapacityLowered", func(t *testing.T) {
		b := open(t)
		learn(t, b, "k", ratelimit.Observation{Dim: ratelimit.Requests, Limit: 50, Remaining: -1})
		learn(t, b, "k", ratelimit.Observation{Dim: ratelimit.Requests, Limit: 2, Remaining: -1})
		take(t, b, "k", one)
		take(t, b, "k", one)
		if d := take(t, b, "k", one); d == 0 {
			t.Error("no wait past a limit lowered to 2")
		}
	})
}

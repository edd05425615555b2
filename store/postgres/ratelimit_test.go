package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/avaagent/ava/llm/ratelimit"
	"github.com/avaagent/ava/llm/ratelimit/ratelimittest"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// The cluster's buckets pace as the in-process ones do.
func TestRateLimitBackend(t *testing.T) {
	ratelimittest.Run(t, func(t *testing.T) ratelimit.Backend { return openAt(t, pgtest.URL(t)).RateLimits() })
}

// Two processes (two stores on one database) share a key's buckets:
// what one takes, the other waits for. The cost of a take (one
// statement, one round trip) is logged for docs/providers.md.
func TestRateLimitSharedAcrossProcesses(t *testing.T) {
	url := pgtest.URL(t)
	a, b := openAt(t, url).RateLimits(), openAt(t, url).RateLimits()
	ctx := context.Background()
	if err := a.Learn(ctx, "k", []ratelimit.Observation{{Dim: ratelimit.Requests, Limit: 2, Remaining: -1}}); err != nil {
		t.Fatal(err)
	}
	one := ratelimit.Amounts{ratelimit.Requests: 1}
	for _, be := range []ratelimit.Backend{a, b} {
		if d, err := be.Take(ctx, "k", one); err != nil || d != 0 {
			t.Fatalf("take within the limit: %s %v", d, err)
		}
	}
	if d, err := b.Take(ctx, "k", one); err != nil || d < 25*time.Second {
		t.Fatalf("third take, from the second process: wait %s %v, want about 30 s", d, err)
	}
	const n = 200
	start := time.Now()
	for range n {
		if _, err := a.Take(ctx, "bench", ratelimit.Amounts{1, 100, 100, 200}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("take on PostgreSQL (one statement over a Unix socket): %.0f µs each over %d", float64(time.Since(start).Microseconds())/n, n)
}

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/avaagent/ava/llm/ratelimit"
)

// RateLimits returns the cluster's shared rate-limit buckets (table
// rate_buckets): every process pacing a provider key and model through
// it waits its turn behind every other's. Each call is one statement on
// the database's clock.
func (s *Store) RateLimits() ratelimit.Backend { return rateBuckets{s} }

type rateBuckets struct{ s *Store }

var _ ratelimit.Backend = rateBuckets{}

// dims lists amounts as the arrays the statements unnest.
func dims(a ratelimit.Amounts) ([]int16, []float64) {
	var ds []int16
	var ns []float64
	for d, n := range a {
		ds, ns = append(ds, int16(d)), append(ns, n)
	}
	return ds, ns
}

// takeSQL refills the key's buckets, takes the cost (a bucket may go
// below zero: its takers queue) and returns each bucket's wait in
// seconds.
const takeSQL = `
WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t),
     cost AS (SELECT * FROM unnest($2::int2[], $3::float8[]) AS c(dim, n))
UPDATE rate_buckets b SET
    level = CASE WHEN b.capacity > 0
        THEN LEAST(b.capacity, b.level + COALESCE(NULLIF(b.rate, 0), b.capacity / 60) * GREATEST(now.t - b.updated_at, 0)) - LEAST(cost.n, b.capacity)
        ELSE b.level END,
    updated_at = GREATEST(b.updated_at, now.t)
FROM now, cost
WHERE b.key = $1 AND b.dim = cost.dim
RETURNING GREATEST(
    CASE WHEN b.capacity > 0 AND b.level < 0 THEN -b.level / COALESCE(NULLIF(b.rate, 0), b.capacity / 60) ELSE 0 END,
    b.blocked_until - now.t, 0)`

// Take implements ratelimit.Backend.
func (b rateBuckets) Take(ctx context.Context, key string, cost ratelimit.Amounts) (time.Duration, error) {
	ds, ns := dims(cost)
	rows, err := b.s.pool.Query(ctx, takeSQL, key, ds, ns)
	if err != nil {
		return 0, fmt.Errorf("take from rate limit %s: %w", key, err)
	}
	defer rows.Close()
	var wait float64
	for rows.Next() {
		var w float64
		if err := rows.Scan(&w); err != nil {
			return 0, fmt.Errorf("take from rate limit %s: %w", key, err)
		}
		wait = max(wait, w)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("take from rate limit %s: %w", key, err)
	}
	return time.Duration(wait * float64(time.Second)), nil
}

const giveSQL = `
WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t),
     back AS (SELECT * FROM unnest($2::int2[], $3::float8[]) AS c(dim, n) WHERE n > 0)
UPDATE rate_buckets b SET
    level = LEAST(b.capacity, LEAST(b.capacity, b.level + COALESCE(NULLIF(b.rate, 0), b.capacity / 60) * GREATEST(now.t - b.updated_at, 0)) + back.n),
    updated_at = GREATEST(b.updated_at, now.t)
FROM now, back
WHERE b.key = $1 AND b.dim = back.dim AND b.capacity > 0`

// Give implements ratelimit.Backend.
func (b rateBuckets) Give(ctx context.Context, key string, n ratelimit.Amounts) error {
	ds, ns := dims(n)
	if _, err := b.s.pool.Exec(ctx, giveSQL, key, ds, ns); err != nil {
		return fmt.Errorf("give back to rate limit %s: %w", key, err)
	}
	return nil
}

// learnSQL inserts or updates one bucket per observation: a new bucket
// starts full (or at what the server said is left); a known one takes
// the new capacity and rate and never keeps more than the server said is
// left; a block holds every request back and empties the bucket. A rate
// of zero is not known yet: the bucket refills its capacity per minute.
const learnSQL = `
WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t)
INSERT INTO rate_buckets AS b (key, dim, capacity, level, rate, updated_at, blocked_until, remaining_seen)
SELECT $1, o.dim, o.lim,
    LEAST(o.lim, CASE WHEN o.rem >= 0 THEN o.rem ELSE 'Infinity'::float8 END, CASE WHEN o.block > 0 THEN 0 ELSE 'Infinity'::float8 END),
    o.rate,
    now.t,
    CASE WHEN o.block > 0 THEN now.t + o.block ELSE 0 END,
    o.rem
FROM now, unnest($2::int2[], $3::float8[], $4::float8[], $5::float8[], $6::float8[]) AS o(dim, lim, rem, rate, block)
ON CONFLICT (key, dim) DO UPDATE SET
    capacity = CASE WHEN EXCLUDED.capacity > 0 THEN EXCLUDED.capacity ELSE b.capacity END,
    rate = CASE WHEN EXCLUDED.rate > 0 THEN EXCLUDED.rate ELSE b.rate END,
    level = LEAST(
        CASE WHEN b.capacity = 0 THEN EXCLUDED.capacity
            ELSE LEAST(b.capacity, b.level + COALESCE(NULLIF(b.rate, 0), b.capacity / 60) * GREATEST(EXCLUDED.updated_at - b.updated_at, 0)) END,
        CASE WHEN EXCLUDED.capacity > 0 THEN EXCLUDED.capacity ELSE 'Infinity'::float8 END,
        CASE WHEN EXCLUDED.remaining_seen >= 0 THEN EXCLUDED.remaining_seen ELSE 'Infinity'::float8 END,
        CASE WHEN EXCLUDED.blocked_until > 0 THEN 0 ELSE 'Infinity'::float8 END),
    updated_at = GREATEST(b.updated_at, EXCLUDED.updated_at),
    blocked_until = GREATEST(b.blocked_until, EXCLUDED.blocked_until),
    remaining_seen = CASE WHEN EXCLUDED.remaining_seen >= 0 THEN EXCLUDED.remaining_seen ELSE b.remaining_seen END`

// Learn implements ratelimit.Backend.
func (b rateBuckets) Learn(ctx context.Context, key string, obs []ratelimit.Observation) error {
	if len(obs) == 0 {
		return nil
	}
	var ds []int16
	var lims, rems, rates, blocks []float64
	for _, o := range obs {
		ds = append(ds, int16(o.Dim))
		lims, rems, rates = append(lims, o.Limit), append(rems, o.Remaining), append(rates, o.Rate)
		blocks = append(blocks, o.Block.Seconds())
	}
	if _, err := b.s.pool.Exec(ctx, learnSQL, key, ds, lims, rems, rates, blocks); err != nil {
		return fmt.Errorf("learn rate limit %s: %w", key, err)
	}
	return nil
}

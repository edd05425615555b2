package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Dim is one dimension a provider limits.
type Dim int

// The dimensions: requests, input tokens, output tokens, and all tokens
// (OpenAI's single token limit, Anthropic's most restrictive one).
const (
	Requests Dim = iota
	InputTokens
	OutputTokens
	Tokens
	numDims
)

var dimNames = [numDims]string{"requests", "input_tokens", "output_tokens", "tokens"}

// String names the dimension.
func (d Dim) String() string {
	if d < 0 || d >= numDims {
		return "unknown"
	}
	return dimNames[d]
}

// Amounts holds a count per dimension.
type Amounts [numDims]float64

// Observation is what a server (or the configuration) said about one
// dimension of a limit.
type Observation struct {
	Dim Dim
	// Limit is the bucket's capacity; zero when not given.
	Limit float64
	// Remaining is what is left now; negative when not given.
	Remaining float64
	// Rate is the refill per second; zero when not known (the bucket
	// then keeps the rate it had, at first its capacity per minute).
	Rate float64
	// Block holds every request back this long (a 429's Retry-After).
	Block time.Duration
}

// Backend keeps the buckets of every limiter key. The in-process
// Memory backend serves one process; store/postgres's serves a cluster.
// Every method is one atomic step (one statement on PostgreSQL).
type Backend interface {
	// Take refills key's known buckets to now, takes cost from them
	// (a bucket may go below zero: the taker queues behind those before
	// it) and returns how long the taker waits for its turn: until every
	// bucket is back at zero and any block has passed.
	Take(ctx context.Context, key string, cost Amounts) (time.Duration, error)
	// Give puts unused amounts back, up to each bucket's capacity.
	Give(ctx context.Context, key string, n Amounts) error
	// Learn applies observations: a new bucket starts at its Limit (or
	// Remaining); a known one takes the new capacity and rate, and never
	// more left than the server said.
	Learn(ctx context.Context, key string, obs []Observation) error
}

// bucket is one dimension's state. A bucket with no capacity is not
// known: it limits nothing.
type bucket struct {
	capacity, level, rate float64
	updated, blocked      time.Time
}

// perSecond is the refill rate: the one learnt, else the capacity per
// minute.
func (b *bucket) perSecond() float64 {
	if b.rate > 0 {
		return b.rate
	}
	return b.capacity / 60
}

func (b *bucket) refill(now time.Time) {
	if b.capacity > 0 && now.After(b.updated) {
		b.level = min(b.capacity, b.level+b.perSecond()*now.Sub(b.updated).Seconds())
	}
	if now.After(b.updated) {
		b.updated = now
	}
}

// take takes n (at most the whole capacity: a request larger than the
// limit goes when the bucket is full) and returns the wait.
func (b *bucket) take(now time.Time, n float64) time.Duration {
	b.refill(now)
	var wait time.Duration
	if b.capacity > 0 {
		b.level -= min(n, b.capacity)
		if b.level < 0 {
			wait = time.Duration(-b.level / b.perSecond() * float64(time.Second))
		}
	}
	if b.blocked.After(now) {
		wait = max(wait, b.blocked.Sub(now))
	}
	return wait
}

func (b *bucket) give(now time.Time, n float64) {
	b.refill(now)
	if b.capacity > 0 {
		b.level = min(b.capacity, b.level+n)
	}
}

func (b *bucket) learn(now time.Time, o Observation) {
	if b.capacity == 0 && o.Limit > 0 {
		b.level, b.updated = o.Limit, now
	}
	b.refill(now)
	if o.Limit > 0 {
		b.capacity = o.Limit
		b.level = min(b.level, b.capacity)
	}
	if o.Rate > 0 {
		b.rate = o.Rate
	}
	if o.Remaining >= 0 {
		b.level = min(b.level, o.Remaining)
	}
	if o.Block > 0 {
		b.blocked = later(b.blocked, now.Add(o.Block))
		b.level = min(b.level, 0)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Memory is the in-process Backend. The zero value is not usable; use
// NewMemory.
type Memory struct {
	mu   sync.Mutex
	now  func() time.Time
	keys map[string]*[numDims]bucket
}

// NewMemory returns an empty in-process backend; now is the clock (nil:
// time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, keys: map[string]*[numDims]bucket{}}
}

func (m *Memory) buckets(key string) *[numDims]bucket {
	bs, ok := m.keys[key]
	if !ok {
		bs = new([numDims]bucket)
		m.keys[key] = bs
	}
	return bs
}

// Take implements Backend.
func (m *Memory) Take(_ context.Context, key string, cost Amounts) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, bs := m.now(), m.buckets(key)
	var wait time.Duration
	for d := range bs {
		wait = max(wait, bs[d].take(now, cost[d]))
	}
	return wait, nil
}

// Give implements Backend.
func (m *Memory) Give(_ context.Context, key string, n Amounts) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, bs := m.now(), m.buckets(key)
	for d := range bs {
		if n[d] > 0 {
			bs[d].give(now, n[d])
		}
	}
	return nil
}

// Learn implements Backend.
func (m *Memory) Learn(_ context.Context, key string, obs []Observation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, bs := m.now(), m.buckets(key)
	for _, o := range obs {
		if o.Dim >= 0 && o.Dim < numDims {
			bs[o.Dim].learn(now, o)
		}
	}
	return nil
}

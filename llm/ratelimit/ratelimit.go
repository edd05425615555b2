// Package ratelimit paces model requests before a provider refuses them.
//
// One Limiter per provider key and model (the key identified by a hash,
// never the key itself) is shared by every agent of the process — the
// orchestrator and all subagents — and, through a shared Backend
// (store/postgres), by every process of a cluster. It keeps a bucket per
// dimension the provider limits (requests, input tokens, output tokens,
// all tokens): each request takes one request and its estimated tokens
// (a quarter of the request's text bytes in, its output cap out) before
// it is sent, waiting its turn when a bucket is empty; the tokens it did
// not use are given back when it ends.
//
// The buckets are learnt from every answer's headers (OpenAI's
// x-ratelimit-*, Anthropic's anthropic-ratelimit-*; see ParseHeaders)
// and, for servers that send none, configured (config.yaml's
// rate_limits:). A 429 that still comes blocks the key for its
// Retry-After and the request is sent again when it has passed, up to
// MaxRefusals times, without counting as one of the run's retries (the
// retry policy wraps this, so a request refused more often than that is
// the retry policy's).
//
// A wait is told to the caller through llm.NoticeWait: the agent loop
// shows it as its activity and keeps it off the run's timeout.
package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avaagent/ava/llm"
)

// MaxRefusals is how many 429s one request waits out before the error
// goes to the retry policy.
const MaxRefusals = 8

// DefaultOutputReserve is the output tokens taken for a request that
// sets no output cap.
const DefaultOutputReserve = 8192

// bookkeepingTimeout bounds a give-back or a lesson from headers, which
// run even when the request's context is done.
const bookkeepingTimeout = 5 * time.Second

// detached is ctx's values without its cancellation, for bookkeeping
// that must happen after a request ends, bounded by bookkeepingTimeout.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
}

// Registry holds the limiters of a process. It is safe for concurrent
// use.
type Registry struct {
	limits llm.RateLimits
	log    *slog.Logger
	local  *Memory

	mu      sync.Mutex
	backend Backend
	// configured records the keys whose configured limits the backend
	// has been given.
	configured map[string]bool
	// flights holds, per key, the requests sent and not yet answered
	// (see flight).
	flights map[string]*flight

	waits    atomic.Int64
	refusals atomic.Int64
}

// NewRegistry returns a registry with the configured limits, keeping
// its buckets in the process until UseBackend says otherwise.
func NewRegistry(limits llm.RateLimits, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	local := NewMemory(nil)
	return &Registry{limits: limits, log: log, local: local, backend: local, configured: map[string]bool{}, flights: map[string]*flight{}}
}

// UseBackend makes the registry keep its buckets in b (a cluster's
// database). Call it before the first request.
func (r *Registry) UseBackend(b Backend) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backend = b
	r.configured = map[string]bool{}
}

// Stats counts the requests that waited for their turn and the 429s
// waited out, since the registry was made.
func (r *Registry) Stats() (waits, refusals int64) { return r.waits.Load(), r.refusals.Load() }

// KeyID identifies an API key by a hash: the limiter's key never holds
// the key itself.
func KeyID(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return hex.EncodeToString(sum[:8])
}

// Wrap returns p paced by the registry's limiters, one per model, under
// apiKey (hashed by KeyID).
func (r *Registry) Wrap(p llm.Provider, apiKey string) llm.Provider {
	return &limited{Provider: p, reg: r, keyID: KeyID(apiKey)}
}

type limited struct {
	llm.Provider
	reg   *Registry
	keyID string
}

// Unwrap returns the paced provider.
func (l *limited) Unwrap() llm.Provider { return l.Provider }

// key is the limiter's key for model.
func (l *limited) key(model string) string { return l.Name() + "/" + l.keyID + "/" + model }

func (l *limited) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	if req == nil {
		return l.Provider.Stream(ctx, req, onDelta)
	}
	key := l.key(req.Model)
	l.reg.configure(ctx, key, l.Name(), req.Model)
	cost := Estimate(req)
	for refused := 0; ; refused++ {
		if err := l.reg.wait(ctx, key, cost); err != nil {
			return nil, err
		}
		streamed := false
		deltas := onDelta
		if onDelta != nil {
			deltas = func(d llm.Delta) { streamed = true; onDelta(d) }
		}
		seq := l.reg.depart(key, cost)
		var once sync.Once
		octx := withObserver(ctx, func(_ int, h http.Header) { once.Do(func() { l.reg.learn(ctx, key, seq, h) }) })
		resp, err := l.Provider.Stream(octx, req, deltas)
		l.reg.land(key, seq, false)
		l.reg.settle(ctx, key, cost, resp)
		retryAfter, limitedErr := refusal(err)
		if err == nil || !limitedErr || refused >= MaxRefusals || ctx.Err() != nil {
			return resp, err
		}
		l.reg.refusals.Add(1)
		l.reg.block(ctx, key, retryAfter, refused)
		l.reg.log.InfoContext(ctx, "rate limited; waiting it out", "limiter", key, "retry_after", retryAfter, "refusal", refused+1)
		if streamed {
			onDelta(llm.Delta{Type: llm.DeltaReset, Attempt: refused + 1, Err: err})
		}
	}
}

// refusal reports whether err is a 429 and the wait it asked for.
func refusal(err error) (time.Duration, bool) {
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusTooManyRequests {
		return apiErr.RetryAfter, true
	}
	return 0, false
}

// Estimate is what req takes before it is sent: one request, a token
// per four bytes of its text in, and its output cap out.
func Estimate(req *llm.Request) Amounts {
	n := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Content) + len(b.Input) + len(b.ToolName) + len(b.Data)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	in := float64(n/4 + 1)
	out := float64(req.MaxTokens)
	if out <= 0 {
		out = DefaultOutputReserve
	}
	if req.ThinkingBudget > 0 && out <= float64(req.ThinkingBudget) {
		out += float64(req.ThinkingBudget)
	}
	var a Amounts
	a[Requests], a[InputTokens], a[OutputTokens], a[Tokens] = 1, in, out, in+out
	return a
}

func (r *Registry) current() Backend {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.backend
}

// flight holds a key's requests sent blind — before the process knew
// any of the key's limits — and not answered yet.
//
// Requests are not held back until the process knows a key's limits: a
// fan-out's first requests all leave at once (a provider's buckets start
// full, and a burst under the limit draws no refusal). What an answer's
// headers then say is left is what was left when the server admitted
// that request; the other blind requests still out were taken from no
// bucket here, and are taken off what it says (see learn). Without that,
// the first answer of twenty requests sent blind would say 29 of 30 are
// left while 10 are, and the second calls of the first subagents
// answered would go on it and be refused. The ones the server admitted
// before it are taken off too (which they are is not known): that errs
// on the side of waiting, and only while the burst is out.
type flight struct {
	known bool // a limit of the key was configured or learnt
	next  uint64
	open  map[uint64]Amounts
}

func (r *Registry) flight(key string) *flight {
	f := r.flights[key]
	if f == nil {
		f = &flight{open: map[uint64]Amounts{}}
		r.flights[key] = f
	}
	return f
}

// depart records a request of key leaving with cost and returns its
// number: 0 when the key's limits are known (the request was taken from
// its buckets).
func (r *Registry) depart(key string, cost Amounts) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.flight(key)
	if f.known {
		return 0
	}
	f.next++
	f.open[f.next] = cost
	return f.next
}

// land records that request seq of key was answered (its headers came)
// or ended, and returns the cost of the other blind requests of key not
// answered yet; known, when set, records that the key's limits are now
// known.
func (r *Registry) land(key string, seq uint64, known bool) (out Amounts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.flight(key)
	f.known = f.known || known
	delete(f.open, seq)
	for _, c := range f.open {
		for d := range out {
			out[d] += c[d]
		}
	}
	return out
}

// configure gives the backend key's configured limits, once per process.
func (r *Registry) configure(ctx context.Context, key, provider, model string) {
	lim, ok := r.limits.Lookup(provider, model)
	if !ok || lim.Zero() {
		return
	}
	r.mu.Lock()
	done := r.configured[key]
	r.configured[key] = true
	r.flight(key).known = true
	b := r.backend
	r.mu.Unlock()
	if done {
		return
	}
	per := lim.Per().Seconds()
	var obs []Observation
	for _, c := range []struct {
		dim Dim
		n   int
	}{{Requests, lim.RPM}, {InputTokens, lim.InputTPM}, {OutputTokens, lim.OutputTPM}} {
		if c.n > 0 {
			obs = append(obs, Observation{Dim: c.dim, Limit: float64(c.n), Remaining: -1, Rate: float64(c.n) / per})
		}
	}
	if err := b.Learn(ctx, key, obs); err != nil {
		r.log.WarnContext(ctx, "rate limiter: configured limits not recorded", "limiter", key, "err", err)
	}
}

// take takes cost from the backend; a backend that fails (the database
// is unreachable) is replaced by the process's own buckets for this
// request, so an outage slows nothing down.
func (r *Registry) take(ctx context.Context, key string, cost Amounts) time.Duration {
	b := r.current()
	wait, err := b.Take(ctx, key, cost)
	if err != nil && b != Backend(r.local) {
		r.log.WarnContext(ctx, "rate limiter: shared buckets unreachable; pacing in this process", "limiter", key, "err", err)
		wait, _ = r.local.Take(ctx, key, cost)
	}
	return wait
}

// wait takes cost and waits for the request's turn, telling ctx's
// WaitNotice; a done ctx gives the tokens back and returns its cause.
func (r *Registry) wait(ctx context.Context, key string, cost Amounts) error {
	d := r.take(ctx, key, cost)
	if d <= 0 {
		return nil
	}
	r.waits.Add(1)
	done := llm.NoticeWait(ctx, d)
	defer done()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.give(ctx, key, cost)
		return fmt.Errorf("waiting for rate limit: %w", context.Cause(ctx))
	}
}

func (r *Registry) give(ctx context.Context, key string, n Amounts) {
	n[Requests] = 0 // a request sent, or queued and abandoned, keeps its slot: the provider counted it
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := r.current().Give(ctx, key, n); err != nil {
		r.log.WarnContext(ctx, "rate limiter: tokens not given back", "limiter", key, "err", err)
	}
}

// settle gives back the tokens taken and not used: all of them when
// the request failed (a refused request is not billed), else the
// estimate's excess over the usage. Input tokens count as Anthropic
// counts them, cache reads excluded.
func (r *Registry) settle(ctx context.Context, key string, cost Amounts, resp *llm.Response) {
	back := cost
	if resp != nil {
		u := resp.Usage
		in := float64(u.InputTokens + u.CacheWriteTokens)
		back[InputTokens] = max(cost[InputTokens]-in, 0)
		back[OutputTokens] = max(cost[OutputTokens]-float64(u.OutputTokens), 0)
		back[Tokens] = max(cost[Tokens]-float64(u.Total()), 0)
	}
	r.give(ctx, key, back)
}

// learn applies the rate-limit headers of the answer to request seq of
// key. Until the key's limits are known, what they say is left is less
// what the other blind requests still out take (see flight).
func (r *Registry) learn(ctx context.Context, key string, seq uint64, h http.Header) {
	obs := ParseHeaders(h, time.Now())
	out := r.land(key, seq, len(obs) > 0)
	if len(obs) == 0 {
		return
	}
	for i, o := range obs {
		if o.Remaining >= 0 {
			obs[i].Remaining = max(o.Remaining-out[o.Dim], 0)
		}
	}
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := r.current().Learn(ctx, key, obs); err != nil {
		r.log.WarnContext(ctx, "rate limiter: headers not recorded", "limiter", key, "err", err)
		_ = r.local.Learn(ctx, key, obs)
	}
}

// block holds key's requests back for a 429's Retry-After, or, when it
// gave none, 1 s doubled with each refusal up to 30 s.
func (r *Registry) block(ctx context.Context, key string, retryAfter time.Duration, refused int) {
	if retryAfter <= 0 {
		retryAfter = min(time.Second<<refused, 30*time.Second)
	}
	obs := []Observation{{Dim: Requests, Remaining: -1, Block: retryAfter}}
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := r.current().Learn(ctx, key, obs); err != nil {
		_ = r.local.Learn(ctx, key, obs)
	}
}

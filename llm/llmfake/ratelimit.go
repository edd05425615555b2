package llmfake

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimit makes a fake enforce a provider's request limit, as a
// bucket of N requests refilled continuously over Window (Anthropic's
// way: N per Window, never more than N at once).
type RateLimit struct {
	N      int
	Window time.Duration
	// NoHeaders leaves the rate-limit headers out of every answer (a
	// server of one's own that only refuses).
	NoHeaders bool
}

// limiter is a fake's enforced limit.
type limiter struct {
	RateLimit
	mu      sync.Mutex
	level   float64
	updated time.Time
	refused atomic.Int64
}

// SetRateLimit makes the server enforce rl from now on: a request over
// the limit is answered 429 with retry-after and retry-after-ms (and,
// unless NoHeaders, every answer carries the wire's rate-limit headers:
// anthropic-ratelimit-requests-* with RFC 3339 resets, or OpenAI's
// x-ratelimit-*-requests with "1.5s" durations). Refused requests are
// not recorded and play no turn.
func (s *Server) SetRateLimit(rl RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = &limiter{RateLimit: rl, level: float64(rl.N), updated: time.Now()}
}

// Refused counts the requests refused with 429 by SetRateLimit's limit.
func (s *Server) Refused() int64 {
	s.mu.Lock()
	l := s.limit
	s.mu.Unlock()
	if l == nil {
		return 0
	}
	return l.refused.Load()
}

// admit takes a request from the limit, sets the answer's headers, and
// reports whether the request may go on; when not, it wrote the 429.
func (s *Server) admit(w http.ResponseWriter, writeErr func(http.ResponseWriter, int, string)) bool {
	s.mu.Lock()
	l := s.limit
	s.mu.Unlock()
	if l == nil {
		return true
	}
	now := time.Now()
	rate := float64(l.N) / l.Window.Seconds()
	l.mu.Lock()
	l.level = min(float64(l.N), l.level+rate*now.Sub(l.updated).Seconds())
	l.updated = now
	ok := l.level >= 1
	if ok {
		l.level--
	}
	remaining := int(math.Floor(l.level))
	full := time.Duration((float64(l.N) - l.level) / rate * float64(time.Second))
	next := time.Duration(max(1-l.level, 0) / rate * float64(time.Second))
	l.mu.Unlock()
	if !l.NoHeaders {
		s.limitHeaders(w.Header(), l.N, remaining, now, full)
	}
	if ok {
		return true
	}
	l.refused.Add(1)
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(next.Seconds()))))
	w.Header().Set("Retry-After-Ms", strconv.FormatInt(max(next.Milliseconds(), 1), 10))
	writeErr(w, http.StatusTooManyRequests, fmt.Sprintf("llmfake: rate limit of %d requests per %s exceeded", l.N, l.Window))
	return false
}

// limitHeaders writes the wire's request-limit headers.
func (s *Server) limitHeaders(h http.Header, limit, remaining int, now time.Time, full time.Duration) {
	if s.openAIWire {
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(limit))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(remaining))
		h.Set("X-Ratelimit-Reset-Requests", full.Round(time.Millisecond).String())
		return
	}
	h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.Itoa(limit))
	h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.Itoa(remaining))
	h.Set("Anthropic-Ratelimit-Requests-Reset", now.Add(full).UTC().Format(time.RFC3339Nano))
}

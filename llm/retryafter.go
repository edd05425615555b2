package llm

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps the wait a server may ask for; RetryPolicy.MaxDelay
// caps it further.
const MaxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads the wait a server asked for, by one rule for
// every provider: retry-after-ms (milliseconds, fractions allowed, as
// OpenAI and Anthropic send it) when it is a positive number, else
// Retry-After as seconds (fractions allowed) or an HTTP date relative to
// now. Negative waits and dates in the past give 0; absurd waits are
// capped at MaxRetryAfter. Zero means no usable wait was given.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if d, ok := scaledWait(h.Get("Retry-After-Ms"), time.Millisecond); ok && d > 0 {
		return d
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if d, ok := scaledWait(v, time.Second); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), MaxRetryAfter)
	}
	return 0
}

// scaledWait parses a decimal count of unit, clamped to [0,
// MaxRetryAfter]; ok is false when v is not a finite number.
func scaledWait(v string, unit time.Duration) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	d := f * float64(unit)
	switch {
	case d <= 0:
		return 0, true
	case d >= float64(MaxRetryAfter):
		return MaxRetryAfter, true
	}
	return time.Duration(d), true
}

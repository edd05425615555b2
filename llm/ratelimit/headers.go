package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// headerSet names one dimension's three headers.
type headerSet struct {
	dim                     Dim
	limit, remaining, reset string
	// rfc3339 is set when reset is a time (Anthropic), not a duration
	// (OpenAI's "1s", "6m0s").
	rfc3339 bool
}

var headerSets = []headerSet{
	{Requests, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", false},
	{Tokens, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", false},
	{Requests, "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", true},
	{InputTokens, "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", true},
	{OutputTokens, "Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset", true},
	{Tokens, "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset", true},
}

// minDeficit and minReset bound when a refill rate is read from the
// reset headers: a bucket nearly full, or a reset a second's rounding
// away, says too little about the rate.
const (
	minDeficit = 2
	minReset   = 500 * time.Millisecond
)

// ParseHeaders reads the rate-limit headers of an answer (OpenAI's
// x-ratelimit-*, Anthropic's anthropic-ratelimit-*) into observations.
// The refill rate is what was used over the time to full replenishment
// ((limit − remaining) / reset); without a usable reset the bucket keeps
// the rate it had (its limit per minute at first).
func ParseHeaders(h http.Header, now time.Time) []Observation {
	var out []Observation
	for _, hs := range headerSets {
		limit, okL := number(h.Get(hs.limit))
		remaining, okR := number(h.Get(hs.remaining))
		if !okL && !okR {
			continue
		}
		o := Observation{Dim: hs.dim, Remaining: -1}
		if okL {
			o.Limit = limit
		}
		if okR {
			o.Remaining = remaining
		}
		reset, okT := resetIn(h.Get(hs.reset), hs.rfc3339, now)
		if okL && okR && okT && limit-remaining >= minDeficit && reset >= minReset {
			o.Rate = (limit - remaining) / reset.Seconds()
		}
		out = append(out, o)
	}
	return out
}

func number(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return f, true
}

// resetIn reads a reset header: an RFC 3339 time or a Go-style duration
// ("1s", "6m0s", "20ms").
func resetIn(v string, rfc3339 bool, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if rfc3339 {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return 0, false
		}
		return max(t.Sub(now), 0), true
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false
	}
	return max(d, 0), true
}

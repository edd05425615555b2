package llm_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"absent", nil, 0},
		{"empty", map[string]string{"Retry-After": " "}, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"spaces around", map[string]string{"Retry-After": " 3 "}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"zero", map[string]string{"Retry-After": "0"}, 0},
		{"negative is clamped", map[string]string{"Retry-After": "-3"}, 0},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"date far ahead is capped", map[string]string{"Retry-After": now.Add(400 * 24 * time.Hour).Format(http.TimeFormat)}, llm.MaxRetryAfter},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"huge is capped", map[string]string{"Retry-After": "1e300"}, llm.MaxRetryAfter},
		{"just over the cap", map[string]string{"Retry-After": "86401"}, llm.MaxRetryAfter},
		{"infinity is not a number of seconds", map[string]string{"Retry-After": "Inf"}, 0},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "250", "Retry-After": "7"}, 250 * time.Millisecond},
		{"fractional milliseconds", map[string]string{"Retry-After-Ms": "1.5"}, 1500 * time.Microsecond},
		{"milliseconds alone", map[string]string{"Retry-After-Ms": "40"}, 40 * time.Millisecond},
		{"huge milliseconds are capped", map[string]string{"Retry-After-Ms": "1e20"}, llm.MaxRetryAfter},
		{"bad milliseconds fall back", map[string]string{"Retry-After-Ms": "x", "Retry-After": "2"}, 2 * time.Second},
		{"negative milliseconds fall back", map[string]string{"Retry-After-Ms": "-5", "Retry-After": "2"}, 2 * time.Second},
		{"zero milliseconds fall back", map[string]string{"Retry-After-Ms": "0", "Retry-After": "2"}, 2 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			if got := llm.ParseRetryAfter(h, now); got != c.want {
				t.Errorf("ParseRetryAfter(%v) = %v, want %v", c.header, got, c.want)
			}
		})
	}
	if got := llm.ParseRetryAfter(nil, now); got != 0 {
		t.Errorf("nil header: %v", got)
	}
}

package ratelimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/llm/ratelimit"
	"github.com/avaagent/ava/llm/ratelimit/ratelimittest"
)

func TestMemoryBackend(t *testing.T) {
	ratelimittest.Run(t, func(*testing.T) ratelimit.Backend { return ratelimit.NewMemory(nil) })
}

func TestParseHeaders(t *testing.T) {
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	openAI := http.Header{}
	openAI.Set("x-ratelimit-limit-requests", "60")
	openAI.Set("x-ratelimit-remaining-requests", "59")
	openAI.Set("x-ratelimit-reset-requests", "1s")
	openAI.Set("x-ratelimit-limit-tokens", "150000")
	openAI.Set("x-ratelimit-remaining-tokens", "149984")
	openAI.Set("x-ratelimit-reset-tokens", "6m0s")
	anthropic := http.Header{}
	anthropic.Set("anthropic-ratelimit-requests-limit", "50")
	anthropic.Set("anthropic-ratelimit-requests-remaining", "40")
	anthropic.Set("anthropic-ratelimit-requests-reset", "2026-11-26T09:00:12Z")
	anthropic.Set("anthropic-ratelimit-input-tokens-limit", "30000")
	anthropic.Set("anthropic-ratelimit-input-tokens-remaining", "29000")
	anthropic.Set("anthropic-ratelimit-input-tokens-reset", "2026-11-26T09:00:02.5Z")
	anthropic.Set("anthropic-ratelimit-output-tokens-limit", "8000")
	anthropic.Set("anthropic-ratelimit-output-tokens-remaining", "8000")
	anthropic.Set("anthropic-ratelimit-output-tokens-reset", "2026-11-26T09:00:00Z")
	for _, c := range []struct {
		name string
		h    http.Header
		want []ratelimit.Observation
	}{
		{"openai", openAI, []ratelimit.Observation{
			// One used of 60 says too little of the rate: kept.
			{Dim: ratelimit.Requests, Limit: 60, Remaining: 59},
			{Dim: ratelimit.Tokens, Limit: 150000, Remaining: 149984, Rate: 16.0 / 360},
		}},
		{"anthropic", anthropic, []ratelimit.Observation{
			{Dim: ratelimit.Requests, Limit: 50, Remaining: 40, Rate: 10.0 / 12},
			{Dim: ratelimit.InputTokens, Limit: 30000, Remaining: 29000, Rate: 1000 / 2.5},
			{Dim: ratelimit.OutputTokens, Limit: 8000, Remaining: 8000},
		}},
		{"none", http.Header{"Content-Type": {"text/event-stream"}}, nil},
		{"garbage", http.Header{"X-Ratelimit-Remaining-Requests": {"lots"}}, nil},
	} {
		if diff := cmp.Diff(c.want, ratelimit.ParseHeaders(c.h, now)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// BenchmarkMemoryTakeGive is the in-process limiter's cost per request
// (a take and a give back, under one mutex).
func BenchmarkMemoryTakeGive(b *testing.B) {
	m := ratelimit.NewMemory(nil)
	ctx := b.Context()
	_ = m.Learn(ctx, "k", []ratelimit.Observation{{Dim: ratelimit.Requests, Limit: 1e9, Remaining: -1, Rate: 1e9}})
	cost := ratelimit.Amounts{1, 1000, 8192, 9192}
	for b.Loop() {
		_, _ = m.Take(ctx, "k", cost)
		_ = m.Give(ctx, "k", ratelimit.Amounts{0, 10, 8000, 8010})
	}
}

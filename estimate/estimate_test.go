package estimate_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/llm"
)

// lognormalHistory generates n runs of one role with lognormal
// durations (median med seconds, spread sigma) and costs that grow with
// the duration plus their own lognormal noise, one spawned every ten
// minutes.
func lognormalHistory(r *rand.Rand, n int, med, sigma, centsPerSecond float64) []estimate.Sample {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]estimate.Sample, n)
	for i := range out {
		secs := med * math.Exp(sigma*r.NormFloat64())
		cents := centsPerSecond * secs * math.Exp(0.3*r.NormFloat64())
		created := start.Add(time.Duration(i) * 10 * time.Minute)
		out[i] = estimate.Sample{Seconds: secs, CostCents: cents, Created: created, Ended: created.Add(time.Duration(secs * float64(time.Second)))}
	}
	return out
}

// benchRoles are the generated histories: per role a median time, a
// spread and a cost rate, within its limits.
var benchRoles = []struct {
	name        string
	med, sigma  float64
	centsPerSec float64
	limits      agent.Limits
}{
	{"web_crawler", 180, 0.5, 0.08, agent.Limits{Timeout: 600 * time.Second, MaxCostCents: 50, MaxTokens: 100_000}},
	{"code_reviewer", 90, 0.4, 0.4, agent.Limits{Timeout: 300 * time.Second, MaxCostCents: 100, MaxTokens: 100_000}},
	{"data_extractor", 40, 0.7, 0.05, agent.Limits{Timeout: 600 * time.Second, MaxCostCents: 50, MaxTokens: 100_000}},
	{"researcher", 240, 0.6, 0.1, agent.Limits{Timeout: 600 * time.Second, MaxCostCents: 50, MaxTokens: 100_000}},
}

// hitRates scores n generated runs per role; it returns the share of
// runs within the estimate made before each (history-based ones only)
// and the median width of the time range (max/min).
func hitRates(n int, seed uint64) (hit, width float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	var hits, scored int
	var widths []float64
	for _, role := range benchRoles {
		samples := lognormalHistory(r, n, role.med, role.sigma, role.centsPerSec)
		_, _, hh, hn := estimate.HitRate(samples, role.limits, llm.Model{ID: "m"})
		hits, scored = hits+hh, scored+hn
		e := estimate.FromHistory(samples, role.limits, llm.Model{ID: "m"})
		widths = append(widths, float64(e.MaxSeconds)/math.Max(float64(e.MinSeconds), 1))
	}
	return float64(hits) / float64(scored), median(widths)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestEstimateHitRate: on 300 generated runs per role, at least 80% of
// the runs scored against a history-based estimate fell inside it.
func TestEstimateHitRate(t *testing.T) {
	for seed := range uint64(5) {
		hit, width := hitRates(300, seed)
		t.Logf("seed %d: hit rate %.1f%%, median time range width max/min %.2f", seed, 100*hit, width)
		if hit < 0.80 {
			t.Errorf("seed %d: hit rate %.1f%%, want at least 80%%", seed, 100*hit)
		}
	}
}

// BenchmarkEstimateHitRate reports the hit rate (mean and worst over
// the iterations, each a different generated history of 250 runs per
// role) and the mean range width; the replay is the work measured.
func BenchmarkEstimateHitRate(b *testing.B) {
	var sumHit, sumWidth float64
	worst := 1.0
	n := 0
	for b.Loop() {
		hit, width := hitRates(250, uint64(n))
		sumHit, sumWidth, worst, n = sumHit+hit, sumWidth+width, math.Min(worst, hit), n+1
	}
	b.ReportMetric(100*sumHit/float64(n), "hit%")
	b.ReportMetric(100*worst, "worst-hit%")
	b.ReportMetric(sumWidth/float64(n), "width-max/min")
}

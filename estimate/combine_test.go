package estimate_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
)

// TestCombine: a parallel group takes its longest member's time (per
// wave of slots), a chain the sum; costs add up; the group's own caps
// bound both; a single spawn is its own estimate.
func TestCombine(t *testing.T) {
	a := estimate.Estimate{MinSeconds: 10, MaxSeconds: 100, TypicalSeconds: 40, MaxCostCents: 5, TypicalCostCents: 2, Model: "m1", Basis: "history", Runs: 5, Tools: []string{"x"}}
	b := estimate.Estimate{MinSeconds: 20, MaxSeconds: 60, TypicalSeconds: 30, MaxCostCents: 7.5, TypicalCostCents: 3, Model: "m2", Basis: "limits", Tools: []string{"x", "y"}}
	tests := map[string]struct {
		ests []estimate.Estimate
		g    estimate.Group
		want estimate.Estimate
	}{
		"single": {[]estimate.Estimate{a}, estimate.Group{Single: true, Slots: 3}, a},
		"parallel": {[]estimate.Estimate{a, b}, estimate.Group{Slots: 3},
			estimate.Estimate{MinSeconds: 20, MaxSeconds: 100, TypicalSeconds: 40, MaxCostCents: 12.5, TypicalCostCents: 5, Model: "m1, m2", Basis: "limits", Runs: 5, Tools: []string{"x", "y"}}},
		"parallel in two waves": {[]estimate.Estimate{a, b, a}, estimate.Group{Slots: 2},
			estimate.Estimate{MinSeconds: 20, MaxSeconds: 200, TypicalSeconds: 40, MaxCostCents: 17.5, TypicalCostCents: 7, Model: "m1, m2", Basis: "limits", Runs: 10, Tools: []string{"x", "y"}}},
		"chain within caps": {[]estimate.Estimate{a, b}, estimate.Group{Chain: true, Slots: 3, TimeoutSeconds: 120, BudgetCents: 10},
			estimate.Estimate{MinSeconds: 30, MaxSeconds: 120, TypicalSeconds: 70, MaxCostCents: 10, TypicalCostCents: 5, Model: "m1, m2", Basis: "limits", Runs: 5, Tools: []string{"x", "y"}}},
	}
	for name, tc := range tests {
		if diff := cmp.Diff(tc.want, estimate.Combine(tc.ests, tc.g)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestFromLimitsThenHistory: under MinHistory samples the estimate is
// the limits (the cost cap lowered to what the token cap buys); with
// enough, the quantiles of the samples, within the limits.
func TestFromLimitsThenHistory(t *testing.T) {
	l := agent.Limits{Timeout: 300 * time.Second, MaxCostCents: 50, MaxTokens: 1000}
	priced := llm.Model{ID: "m", Priced: true, Price: llm.Price{Input: 1000, Output: 2000}}
	e := estimate.FromLimits(l, priced)
	if e.Basis != "limits" || e.MinSeconds != estimate.MinSeconds || e.MaxSeconds != 300 || e.MaxCostCents != 2 {
		t.Fatalf("from limits: %+v", e)
	}
	var samples []estimate.Sample
	t0 := time.Unix(0, 0)
	for i := range estimate.MinHistory {
		samples = append(samples, estimate.Sample{Seconds: float64(20 + 10*i), CostCents: 1, Created: t0, Ended: t0.Add(time.Hour)})
	}
	if e := estimate.FromHistory(samples[:estimate.MinHistory-1], l, priced); e.Basis != "limits" {
		t.Fatalf("too few samples: %+v", e)
	}
	e = estimate.FromHistory(samples, l, priced)
	if e.Basis != "history" || e.Runs != estimate.MinHistory || e.MinSeconds != 22 || e.MaxSeconds != 58 || e.TypicalSeconds != 40 || e.MaxCostCents != 1 {
		t.Fatalf("from history: %+v", e)
	}
}

// TestStats: a role's figures count its finished runs, and each run is
// scored against the estimate made from the runs that ended before it
// was spawned, model by model, with the limits the runs were spawned
// with: the first five (estimated from the limits) fall inside theirs,
// the last three, each longer than every run before it, do not.
func TestStats(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var runs []store.Run
	for i := range 8 {
		created := t0.Add(time.Duration(i) * time.Hour)
		start, end := created, created.Add(time.Minute)
		runs = append(runs, store.Run{Role: "r", Model: "p/m", Status: lifecycle.Success, CreatedAt: created, StartedAt: &start, EndedAt: &end,
			Active: time.Duration(30+i) * time.Second, CostCents: 2})
	}
	var asked []string
	limits := func(store.Run) agent.Limits { return agent.Limits{Timeout: time.Minute, MaxCostCents: 10} }
	resolve := func(name string) llm.Model { asked = append(asked, name); return llm.Model{ID: name} }
	st := estimate.Stats("r", runs, limits, resolve)
	want := estimate.RoleStats{Role: "r", Runs: 8, MedianSeconds: 33.5, MedianCostCents: 2, Hits: 5, Scored: 8, HitRate: 0.625, HistoryScored: 3, HistoryHitRate: 0}
	if diff := cmp.Diff(want, st); diff != "" || !cmp.Equal(asked, []string{"p/m"}) {
		t.Fatalf("stats (-want +got):\n%s\nresolved %v", diff, asked)
	}
}

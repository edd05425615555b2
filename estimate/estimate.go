// Package estimate is what a spawn is expected to take, learnt from the
// role's past runs: pure functions over samples of finished runs (the
// runtime reads the runs from the store and passes them in), the
// estimate of a group, and how often past estimates held (RoleStats).
package estimate

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
)

// Estimates learn from a role's past runs. With fewer than MinHistory
// finished runs of the role on the same model, an estimate comes from the
// limits alone: the time range is [MinSeconds, timeout] and the maximum
// cost is the cost cap (lowered to what the token cap can buy at the
// model's price). With enough history, the time range is the
// [Low, High] quantiles of the last HistoryWindow runs'
// durations and the maximum cost the High quantile of their
// costs, both within the limits; the median is shown as the typical value.
const (
	MinHistory    = 5
	HistoryWindow = 200
	Low           = 0.05
	High          = 0.95
	// MinSeconds is the low end of a time range known from limits only.
	MinSeconds = 10
)

// LearnedStatuses are the ends an estimate learns from: a run that was
// cancelled or interrupted says nothing about how long its work takes.
var LearnedStatuses = []lifecycle.Status{lifecycle.Success, lifecycle.Timeout, lifecycle.CostExceeded,
	lifecycle.TokensExceeded, lifecycle.IterationsExceeded, lifecycle.Error}

// Estimate is what a spawn is expected to take, shown in its proposal
// and carried by its SpawnProposed event (whose content type defines it).
type Estimate = event.SpawnEstimate

// Sample is one finished run an estimate learns from.
type Sample struct {
	Seconds   float64
	CostCents float64
	// Created is when the run was spawned, Ended when it finished: an
	// estimate made for a run may only use samples ended before it was
	// created.
	Created, Ended time.Time
}

// contains reports whether a run that took seconds and cost cents fell
// inside the estimate e.
func contains(e Estimate, seconds, cents float64) bool {
	return seconds >= float64(e.MinSeconds) && seconds <= float64(e.MaxSeconds) && cents <= e.MaxCostCents+1e-9
}

// FromLimits is the estimate with no history.
func FromLimits(l agent.Limits, model llm.Model) Estimate {
	maxS := int(math.Ceil(l.Timeout.Seconds()))
	cost := l.MaxCostCents
	if model.Priced && l.MaxTokens > 0 {
		perToken := max(model.Price.Input, model.Price.Output, model.Price.CacheWrite) / 1e6
		if byTokens := float64(l.MaxTokens) * perToken; cost == 0 || byTokens < cost {
			cost = byTokens
		}
	}
	return Estimate{MinSeconds: min(MinSeconds, maxS), MaxSeconds: maxS, MaxCostCents: round2(cost),
		Model: nameOf(model), Basis: "limits"}
}

// EstimateFromHistory is the estimate from past runs (at most the last
// HistoryWindow of them), within the limits; with fewer than MinHistory
// samples it is FromLimits.
func FromHistory(samples []Sample, l agent.Limits, model llm.Model) Estimate {
	base := FromLimits(l, model)
	if len(samples) < MinHistory {
		return base
	}
	if len(samples) > HistoryWindow {
		samples = samples[len(samples)-HistoryWindow:]
	}
	secs, costs := make([]float64, len(samples)), make([]float64, len(samples))
	for i, s := range samples {
		secs[i], costs[i] = s.Seconds, s.CostCents
	}
	slices.Sort(secs)
	slices.Sort(costs)
	e := base
	e.Basis, e.Runs = "history", len(samples)
	e.MinSeconds = min(int(math.Floor(quantile(secs, Low))), base.MaxSeconds)
	e.MaxSeconds = min(int(math.Ceil(quantile(secs, High))), base.MaxSeconds)
	e.MaxSeconds = max(e.MaxSeconds, e.MinSeconds)
	e.TypicalSeconds = int(math.Round(quantile(secs, 0.5)))
	e.MaxCostCents = min(roundUp2(quantile(costs, High)), base.MaxCostCents)
	e.TypicalCostCents = round2(quantile(costs, 0.5))
	return e
}

// quantile is the q-quantile of sorted values, interpolated linearly
// between the two nearest ranks.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

// nameOf is a model's full name, or its bare ID when it has no provider
// (a stored run's model that no configured provider serves now).
func nameOf(m llm.Model) string {
	if m.Provider == nil {
		return m.ID
	}
	return m.Name()
}

func round2(v float64) float64   { return math.Round(v*100) / 100 }
func roundUp2(v float64) float64 { return math.Ceil(v*100) / 100 }

// HitRate replays history in the order the runs were spawned: each run's
// estimate is made from the runs that had ended before it was spawned
// (limits is the estimate with no history), and the run is a hit when
// its actual time and cost fell inside. It returns the hits and how many
// runs were scored, and the same two counts for the runs whose estimate
// came from history.
func HitRate(samples []Sample, l agent.Limits, model llm.Model) (hits, scored, histHits, histScored int) {
	byCreated := slices.Clone(samples)
	slices.SortFunc(byCreated, func(a, b Sample) int { return a.Created.Compare(b.Created) })
	byEnded := slices.Clone(samples)
	slices.SortFunc(byEnded, func(a, b Sample) int { return a.Ended.Compare(b.Ended) })
	for _, s := range byCreated {
		n, _ := slices.BinarySearchFunc(byEnded, s.Created, func(x Sample, t time.Time) int {
			if x.Ended.Before(t) {
				return -1
			}
			return 1
		})
		e := FromHistory(byEnded[:n], l, model)
		hit := contains(e, s.Seconds, s.CostCents)
		scored++
		if hit {
			hits++
		}
		if e.Basis == "history" {
			histScored++
			if hit {
				histHits++
			}
		}
	}
	return hits, scored, histHits, histScored
}

// Samples turns stored runs into samples, keeping those of the model
// (every model when model is "") that started and ended. A run's time is
// its active time (store.Run.Active): the idle time between its turns and its
// wait in the queue say nothing about how long its work takes.
func Samples(runs []store.Run, model string) []Sample {
	var out []Sample
	for _, r := range runs {
		if r.StartedAt == nil || r.EndedAt == nil || model != "" && r.Model != model {
			continue
		}
		out = append(out, Sample{Seconds: r.Active.Seconds(), CostCents: r.CostCents,
			Created: r.CreatedAt, Ended: *r.EndedAt})
	}
	slices.SortFunc(out, func(a, b Sample) int { return a.Ended.Compare(b.Ended) })
	return out
}

// Group is how the members of a proposed group run, for Combine.
type Group struct {
	// Single is one spawn alone: its estimate is the total.
	Single bool
	// Chain runs the members one after another; otherwise they run in
	// parallel, Slots at a time.
	Chain bool
	Slots int
	// TimeoutSeconds and BudgetCents are the group's own caps (0: none).
	TimeoutSeconds, BudgetCents float64
}

// Combine is a group's total: a parallel group takes its longest
// member's time (once per wave when it has more members than slots), a
// chain the sum; the cost is the sum, within the group's budget and
// timeout.
func Combine(ests []Estimate, g Group) Estimate {
	if len(ests) == 1 && g.Single {
		return ests[0]
	}
	t := Estimate{Basis: "history"}
	var models []string
	for _, e := range ests {
		if g.Chain {
			t.MinSeconds, t.MaxSeconds, t.TypicalSeconds = t.MinSeconds+e.MinSeconds, t.MaxSeconds+e.MaxSeconds, t.TypicalSeconds+e.TypicalSeconds
		} else {
			t.MinSeconds, t.MaxSeconds, t.TypicalSeconds = max(t.MinSeconds, e.MinSeconds), max(t.MaxSeconds, e.MaxSeconds), max(t.TypicalSeconds, e.TypicalSeconds)
		}
		t.MaxCostCents, t.TypicalCostCents = round2(t.MaxCostCents+e.MaxCostCents), round2(t.TypicalCostCents+e.TypicalCostCents)
		t.Runs += e.Runs
		if e.Basis != "history" {
			t.Basis = "limits"
		}
		models = appendNew(models, e.Model)
		for _, tl := range e.Tools {
			t.Tools = appendNew(t.Tools, tl)
		}
	}
	if waves := (len(ests) + g.Slots - 1) / max(g.Slots, 1); !g.Single && !g.Chain && waves > 1 {
		t.MaxSeconds *= waves
	}
	if g.TimeoutSeconds > 0 {
		t.MaxSeconds = min(t.MaxSeconds, int(g.TimeoutSeconds))
		t.MinSeconds = min(t.MinSeconds, t.MaxSeconds)
	}
	if g.BudgetCents > 0 {
		t.MaxCostCents = min(t.MaxCostCents, g.BudgetCents)
	}
	t.Model = strings.Join(models, ", ")
	return t
}

// appendNew appends s to list unless it is in it already.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// RoleStats is one role's past runs and how good its estimates were.
type RoleStats struct {
	Role            string  `json:"role"`
	Runs            int     `json:"runs"`
	MedianSeconds   float64 `json:"medianSeconds"`
	MedianCostCents float64 `json:"medianCostCents"`
	// HitRate is the share of runs whose actual time and cost fell
	// inside the estimate made before they were spawned (Hits of
	// Scored); HistoryHitRate the same for runs whose estimate came
	// from history.
	Hits           int     `json:"hits"`
	Scored         int     `json:"scored"`
	HitRate        float64 `json:"hitRate"`
	HistoryScored  int     `json:"historyScored"`
	HistoryHitRate float64 `json:"historyHitRate"`
}

// Stats scores a role's runs (LearnedStatuses, newest first) model by
// model (an estimate only learns from runs on the same model), each
// model's runs against limits(its newest run): the limits they were
// spawned with. resolve gives a model by name (its price).
func Stats(roleName string, runs []store.Run, limits func(store.Run) agent.Limits, resolve func(string) llm.Model) RoleStats {
	st := RoleStats{Role: roleName}
	all := Samples(runs, "")
	st.Runs = len(all)
	if len(all) == 0 {
		return st
	}
	secs, costs := make([]float64, len(all)), make([]float64, len(all))
	for i, s := range all {
		secs[i], costs[i] = s.Seconds, s.CostCents
	}
	slices.Sort(secs)
	slices.Sort(costs)
	st.MedianSeconds, st.MedianCostCents = quantile(secs, 0.5), round2(quantile(costs, 0.5))
	byModel := map[string][]store.Run{}
	for _, run := range runs {
		byModel[run.Model] = append(byModel[run.Model], run)
	}
	for name, rs := range byModel {
		model := resolve(name)
		h, n, hh, hn := HitRate(Samples(rs, name), limits(rs[0]), model)
		st.Hits, st.Scored, st.HistoryScored = st.Hits+h, st.Scored+n, st.HistoryScored+hn
		st.HistoryHitRate += float64(hh)
	}
	st.HitRate = ratio(float64(st.Hits), st.Scored)
	st.HistoryHitRate = ratio(st.HistoryHitRate, st.HistoryScored)
	return st
}

// ratio is a/n, 0 when n is 0.
func ratio(a float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return a / float64(n)
}

package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/store"
)

// Estimates learn from a role's past runs. With fewer than MinHistory
// finished runs of the role on the same model, an estimate comes from the
// limits alone: the time range is [MinSeconds, timeout] and the maximum
// cost is the cost cap (lowered to what the token cap can buy at the
// model's price). With enough history, the time range is the
// [EstimateLow, EstimateHigh] quantiles of the last HistoryWindow runs'
// durations and the maximum cost the EstimateHigh quantile of their
// costs, both within the limits; the median is shown as the typical value.
const (
	MinHistory    = 5
	HistoryWindow = 200
	EstimateLow   = 0.05
	EstimateHigh  = 0.95
	// MinSeconds is the low end of a time range known from limits only.
	MinSeconds = 10
)

// learnedStatuses are the ends an estimate learns from: a run that was
// cancelled or interrupted says nothing about how long its work takes.
var learnedStatuses = []lifecycle.Status{lifecycle.Success, lifecycle.Timeout, lifecycle.CostExceeded,
	lifecycle.TokensExceeded, lifecycle.IterationsExceeded, lifecycle.Error}

// Estimate is what a spawn is expected to take, shown in its proposal
// and carried by its SpawnProposed event.
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

// EstimateFromLimits is the estimate with no history.
func EstimateFromLimits(l agent.Limits, model llm.Model) Estimate {
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
// samples it is EstimateFromLimits.
func EstimateFromHistory(samples []Sample, l agent.Limits, model llm.Model) Estimate {
	base := EstimateFromLimits(l, model)
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
	e.MinSeconds = min(int(math.Floor(quantile(secs, EstimateLow))), base.MaxSeconds)
	e.MaxSeconds = min(int(math.Ceil(quantile(secs, EstimateHigh))), base.MaxSeconds)
	e.MaxSeconds = max(e.MaxSeconds, e.MinSeconds)
	e.TypicalSeconds = int(math.Round(quantile(secs, 0.5)))
	e.MaxCostCents = min(roundUp2(quantile(costs, EstimateHigh)), base.MaxCostCents)
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
		e := EstimateFromHistory(byEnded[:n], l, model)
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

// samplesOf turns stored runs into samples, keeping those of the model
// (every model when model is "") that started and ended. A run's time is
// its active time (figures.go): the idle time between its turns and its
// wait in the queue say nothing about how long its work takes.
func samplesOf(runs []store.Run, model string) []Sample {
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

// history loads the role's finished runs that estimates learn from.
func (m *Manager) history(ctx context.Context, role string) ([]store.Run, error) {
	runs, err := m.opt.Store.ListRuns(ctx, store.RunFilter{Role: role, Status: learnedStatuses, Limit: 20 * HistoryWindow})
	if err != nil {
		return nil, fmt.Errorf("estimate %s: load past runs: %w", role, err)
	}
	return runs, nil
}

// estimate is the estimate for one planned spawn.
func (m *Manager) estimate(ctx context.Context, p plan) (Estimate, error) {
	runs, err := m.history(ctx, p.role.Name)
	if err != nil {
		return Estimate{}, err
	}
	e := EstimateFromHistory(samplesOf(runs, p.model.Name()), p.limits, p.model)
	e.Tools = p.tools
	return e, nil
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

// Stats returns every known role's statistics, in role order.
func (m *Manager) Stats(ctx context.Context) ([]RoleStats, error) {
	var out []RoleStats
	for _, r := range role.Sorted(m.opt.Roles) {
		runs, err := m.history(ctx, r.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, m.roleStats(r, runs))
	}
	return out, nil
}

// roleStats scores a role's runs model by model (an estimate only learns
// from runs on the same model), against the role's limits merged with the
// newest run's own config.
func (m *Manager) roleStats(r role.Role, runs []store.Run) RoleStats {
	st := RoleStats{Role: r.Name}
	all := samplesOf(runs, "")
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
		model, err := m.opt.Catalog.Resolve(name)
		if err != nil {
			model = llm.Model{ID: name}
		}
		h, n, hh, hn := HitRate(samplesOf(rs, name), runLimits(r, rs[0]), model)
		st.Hits, st.Scored, st.HistoryScored = st.Hits+h, st.Scored+n, st.HistoryScored+hn
		st.HistoryHitRate += float64(hh)
	}
	st.HitRate = ratio(float64(st.Hits), st.Scored)
	st.HistoryHitRate = ratio(st.HistoryHitRate, st.HistoryScored)
	return st
}

func ratio(a float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return a / float64(n)
}

// runLimits is the limits a stored run was spawned with: the role's,
// with the run's own config over them.
func runLimits(r role.Role, run store.Run) agent.Limits {
	var c Config
	if len(run.Config) > 0 {
		_ = json.Unmarshal(run.Config, &c)
	}
	return c.limits(r)
}

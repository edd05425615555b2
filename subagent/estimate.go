package subagent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/store"
)

// history loads the role's finished runs that estimates learn from.
func (m *Manager) history(ctx context.Context, role string) ([]store.Run, error) {
	runs, err := m.opt.Store.ListRuns(ctx, store.RunFilter{Role: role, Status: estimate.LearnedStatuses, Limit: 20 * estimate.HistoryWindow})
	if err != nil {
		return nil, fmt.Errorf("estimate %s: load past runs: %w", role, err)
	}
	return runs, nil
}

// estimate is the estimate for one planned spawn.
func (m *Manager) estimate(ctx context.Context, p plan) (estimate.Estimate, error) {
	runs, err := m.history(ctx, p.role.Name)
	if err != nil {
		return estimate.Estimate{}, err
	}
	e := estimate.FromHistory(estimate.Samples(runs, p.model.Name()), p.limits, p.model)
	e.Tools = p.tools
	return e, nil
}

// Stats returns every known role's statistics, in role order.
func (m *Manager) Stats(ctx context.Context) ([]estimate.RoleStats, error) {
	var out []estimate.RoleStats
	for _, r := range role.Sorted(m.roleSet().roles) {
		runs, err := m.history(ctx, r.Name)
		if err != nil {
			return nil, err
		}
		limits := func(run store.Run) agent.Limits { return runLimits(r, run) }
		out = append(out, estimate.Stats(r.Name, runs, limits, m.resolveStored))
	}
	return out, nil
}

// resolveStored resolves a stored run's model name; one no configured
// provider serves now is only its ID, unpriced.
func (m *Manager) resolveStored(name string) llm.Model {
	model, err := m.opt.Catalog.Resolve(name)
	if err != nil {
		return llm.Model{ID: name}
	}
	return model
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

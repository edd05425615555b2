package subagent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// addRun stores a finished run of role on model, spawned at created,
// that took seconds and cost cents.
func addRun(t *testing.T, st store.Store, role, model string, created time.Time, seconds, cents float64, status lifecycle.Status) {
	t.Helper()
	id := uuid.New()
	short := fmt.Sprintf("S-%x", id[:3])
	start := created.Add(time.Second)
	must(t, st.CreateRun(context.Background(), store.Run{ID: id.String(), ShortID: short, SessionKey: store.SubagentSessionPrefix + short,
		Role: role, Task: "t", Model: model, Status: lifecycle.Running, CreatedAt: created, StartedAt: &start}))
	must(t, st.TransitionRun(context.Background(), id.String(), "", []lifecycle.Status{lifecycle.Running}, status,
		&store.RunFinish{CostCents: cents, Active: time.Duration(seconds * float64(time.Second)),
			EndedAt: start.Add(time.Duration(seconds * float64(time.Second)))}))
}

// TestEstimateFromLimitsThenFromHistory: with no past runs the estimate
// is the limits; after runs of the role on the same model it is their
// spread, and other models' and cancelled runs are left out.
func TestEstimateFromLimitsThenFromHistory(t *testing.T) {
	h := confirming(t, "always", nil)
	id := proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "researcher", Task: "dig"}))
	p, err := h.m.Proposal(context.Background(), id)
	must(t, err)
	e := p.Estimate
	if e.Basis != "limits" || e.MinSeconds != 10 || e.MaxSeconds != 600 || e.MaxCostCents != 50 || len(e.Tools) == 0 {
		t.Fatalf("estimate with no history: %+v", e)
	}
	base := time.Now().Add(-24 * time.Hour)
	for i := range 20 {
		addRun(t, h.store, "researcher", e.Model, base.Add(time.Duration(i)*time.Hour), float64(60+i), 5+float64(i)/10, lifecycle.Success)
	}
	addRun(t, h.store, "researcher", "other/model", base, 500, 40, lifecycle.Success)
	addRun(t, h.store, "researcher", e.Model, base, 1, 0, lifecycle.Cancelled)
	id = proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "researcher", Task: "dig"}))
	p, err = h.m.Proposal(context.Background(), id)
	must(t, err)
	e = p.Estimate
	if e.Basis != "history" || e.Runs != 20 || e.MinSeconds != 60 || e.MaxSeconds != 79 || e.TypicalSeconds != 70 ||
		e.MaxCostCents != 6.81 || e.TypicalCostCents != 5.95 {
		t.Fatalf("estimate from history: %+v", e)
	}
	st, err := h.m.Stats(context.Background())
	must(t, err)
	for _, s := range st {
		if s.Role != "researcher" {
			if s.Runs != 0 {
				t.Errorf("%s: %d runs", s.Role, s.Runs)
			}
			continue
		}
		// 21 runs count (the cancelled one does not); each of the 20 is
		// scored against the estimate made from the runs before it.
		if s.Runs != 21 || s.Scored != 21 || s.MedianSeconds != 70 || s.HistoryScored != 15 || s.HitRate <= 0 {
			t.Errorf("researcher stats %+v", s)
		}
	}
}

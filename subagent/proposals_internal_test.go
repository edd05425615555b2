package subagent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/tool"
)

// fakeSpawner is the runtime as the proposals see it.
type fakeSpawner struct {
	estimates int
	start     func(ps ProposedSpawn) (started, func(), error)
}

func (f *fakeSpawner) estimateSpawn(_ context.Context, ps ProposedSpawn) (estimate.Estimate, error) {
	f.estimates++
	return estimate.Estimate{MinSeconds: 10, MaxSeconds: 60, MaxCostCents: 5, Basis: "limits", Model: ps.Configs[0].Model}, nil
}

func (f *fakeSpawner) startSpawn(_ context.Context, ps ProposedSpawn, _ trace.SpanContext) (started, func(), error) {
	return f.start(ps)
}

// TestProposalsBehindTheirInterface: the proposal lifecycle runs on the
// store and its own claim set, reaching the runtime only through
// spawner: a proposal is gated and stored, a second answer while the
// first is starting it is refused (ErrDecided) without waiting, a
// change is estimated again, and the decision is stored once.
func TestProposalsBehindTheirInterface(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ava.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	entered, release := make(chan struct{}), make(chan struct{})
	var startedModel string
	rt := &fakeSpawner{start: func(ps ProposedSpawn) (started, func(), error) {
		startedModel = ps.Configs[0].Model
		close(entered)
		<-release
		return started{ids: []string{"S-abcdef"}, runID: "run-1"}, func() {}, nil
	}}
	pp := &proposals{rt: rt, store: st, mask: func(s string) string { return s }, now: time.Now, log: slog.Default()}
	pp.conf.Store(&confirmRule{policy: confirm.Policy{Ask: confirm.Always}, timeout: time.Minute})

	ps := ProposedSpawn{Configs: []Config{{Role: "researcher", Task: "dig", Model: "haiku"}}, Mode: ModeSingle}
	p, err := pp.gate(ctx, ps, tool.Caller{}, "", "because")
	if err != nil || p == nil || p.Status != store.SpawnPending || p.Estimate.MaxCostCents != 5 || rt.estimates != 1 {
		t.Fatalf("gate: %+v, %v (estimates %d)", p, err, rt.estimates)
	}
	type result struct {
		d   Decided
		err error
	}
	first := make(chan result, 1)
	go func() {
		d, err := pp.decide(ctx, p.ID, confirm.Modified, confirm.Change{Model: "sonnet"})
		first <- result{d, err}
	}()
	<-entered
	if _, err := pp.answer(ctx, p.ID, "yes"); !errors.Is(err, ErrDecided) {
		t.Fatalf("second answer while the first starts it: %v, want ErrDecided", err)
	}
	close(release)
	r := <-first
	if r.err != nil || r.d.Decision != store.SpawnConfirmed || r.d.Change == "" || len(r.d.SubagentIDs) != 1 || startedModel != "sonnet" || rt.estimates != 2 {
		t.Fatalf("decide: %+v, %v (started %q, estimates %d)", r.d, r.err, startedModel, rt.estimates)
	}
	got, err := pp.get(ctx, p.ID)
	if err != nil || got.Status != store.SpawnConfirmed {
		t.Fatalf("stored: %+v, %v", got, err)
	}
	if _, err := pp.decide(ctx, p.ID, confirm.Rejected, confirm.Change{}); !errors.Is(err, ErrDecided) {
		t.Fatalf("deciding a decided proposal: %v", err)
	}
	if pending, err := pp.list(ctx, ""); err != nil || len(pending) != 0 {
		t.Fatalf("pending after the decision: %+v, %v", pending, err)
	}
}

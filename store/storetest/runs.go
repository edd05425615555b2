package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

func runCases() []testCase {
	return []testCase{
		{"RunCreateGet", testRunCreateGet},
		{"RunCreateValidation", testRunCreateValidation},
		{"RunDuplicate", testRunDuplicate},
		{"RunPrefixLookup", testRunPrefixLookup},
		{"ListRuns", testListRuns},
		{"UpdateRunProgress", testUpdateRunProgress},
	}
}

func testRunCreateGet(t *testing.T, s store.Store) {
	started := base.Add(time.Second)
	want := store.Run{
		ID: uuid.NewString(), ShortID: "S-7f3a2b", SessionKey: "ava:subagent:S-7f3a2b",
		ParentSession: "ava:cli:main", ParentAgent: "ava", GroupID: "g-1", Mode: store.ModeParallel,
		Role: "web_crawler", Task: "crawl the docs", Model: "openai/gpt-x",
		Config: []byte(`{"timeout":"600s","maxCostCents":50}`), Status: lifecycle.Running,
		Tokens: 7, CostCents: 0.25, Iterations: 2, Active: 1500 * time.Millisecond, CreatedAt: base, StartedAt: &started,
	}
	must(t, s.CreateRun(ctx(t), want))
	want.TurnStartedAt = &started // it defaults to StartedAt
	for _, ref := range []string{want.ID, want.ShortID, strings.ToUpper(want.ID), "s-7F3A2B"} {
		got, err := s.GetRun(ctx(t), ref)
		must(t, err)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("GetRun(%q) (-want +got):\n%s", ref, diff)
		}
	}
	// Creating a run creates its own session, so its stream can be
	// recorded from the start.
	if _, err := s.GetSession(ctx(t), want.SessionKey); err != nil {
		t.Fatalf("run session: %v", err)
	}
	ok, err := s.ShortIDExists(ctx(t), "S-7f3a2b")
	must(t, err)
	if !ok {
		t.Fatal("ShortIDExists = false for a stored run")
	}
	ok, err = s.ShortIDExists(ctx(t), "S-000000")
	must(t, err)
	if ok {
		t.Fatal("ShortIDExists = true for an unused short ID")
	}
	_, err = s.ShortIDExists(ctx(t), "7f3a2b")
	wantPlainErr(t, err)
}

func testRunCreateValidation(t *testing.T, s store.Store) {
	for name, mutate := range map[string]func(r *store.Run){
		"not a UUID":      func(r *store.Run) { r.ID = "run-1" },
		"short ID upper":  func(r *store.Run) { r.ShortID = "S-ABCDEF" },
		"short ID length": func(r *store.Run) { r.ShortID = "S-abc" },
		"no session":      func(r *store.Run) { r.SessionKey = "" },
		"bad mode":        func(r *store.Run) { r.Mode = "swarm" },
		"bad status":      func(r *store.Run) { r.Status = "done" },
		"no task":         func(r *store.Run) { r.Task = " " },
		"no role":         func(r *store.Run) { r.Role = "" },
		"bad config":      func(r *store.Run) { r.Config = []byte(`{"a":`) },
		"negative tokens": func(r *store.Run) { r.Tokens = -1 },
	} {
		r := newRun("S-00aa00", "")
		mutate(&r)
		err := s.CreateRun(ctx(t), r)
		if err == nil {
			t.Fatalf("%s: CreateRun accepted %+v", name, r)
		}
		wantPlainErr(t, err)
	}
	if ok, err := s.ShortIDExists(ctx(t), "S-00aa00"); err != nil || ok {
		t.Fatalf("a refused run was stored (exists %v, err %v)", ok, err)
	}
}

func testRunDuplicate(t *testing.T, s store.Store) {
	first := newRun("S-aaaaaa", "ava:cli:p")
	must(t, s.CreateRun(ctx(t), first))

	clash := newRun("S-aaaaaa", "ava:cli:p")
	clash.SessionKey = "ava:subagent:other"
	err := s.CreateRun(ctx(t), clash)
	wantErr(t, err, store.ErrDuplicate)
	if !strings.Contains(err.Error(), "S-aaaaaa") {
		t.Fatalf("duplicate error %q does not name the short ID", err)
	}
	sameID := newRun("S-bbbbbb", "ava:cli:p")
	sameID.ID = first.ID
	wantErr(t, s.CreateRun(ctx(t), sameID), store.ErrDuplicate)

	// The caller draws again and succeeds.
	clash.ShortID, clash.SessionKey = "S-cccccc", "ava:subagent:S-cccccc"
	must(t, s.CreateRun(ctx(t), clash))
}

func testRunPrefixLookup(t *testing.T, s store.Store) {
	runs := map[string]store.Run{}
	for _, spec := range []struct{ id, short string }{
		{"0a1b2c3d-0000-4000-8000-000000000001", "S-7f3a2b"},
		{"0a1b9999-0000-4000-8000-000000000002", "S-7f3c00"},
		{"fedcba98-0000-4000-8000-000000000003", "S-123456"},
	} {
		r := newRun(spec.short, "")
		r.ID = spec.id
		runs[spec.short] = createRun(t, s, r)
	}
	for _, tc := range []struct{ ref, want string }{
		{"S-7f3a", "S-7f3a2b"},
		{"S-7f3c", "S-7f3c00"},
		{"s-12", "S-123456"},
		{"S-123456", "S-123456"},
		{"0a1b2", "S-7f3a2b"},
		{"FEDC", "S-123456"},
		{"0a1b9999-0000-4000-8000-000000000002", "S-7f3c00"},
	} {
		got, err := s.GetRun(ctx(t), tc.ref)
		if err != nil {
			t.Fatalf("GetRun(%q): %v", tc.ref, err)
		}
		if diff := cmp.Diff(runs[tc.want], got); diff != "" {
			t.Fatalf("GetRun(%q) (-want +got):\n%s", tc.ref, diff)
		}
	}
	for _, ref := range []string{"S-7f3", "S-7", "0a1b"} {
		_, err := s.GetRun(ctx(t), ref)
		var amb *store.AmbiguousError
		if !errors.As(err, &amb) || !errors.Is(err, store.ErrAmbiguous) {
			t.Fatalf("GetRun(%q) error = %v, want an *AmbiguousError", ref, err)
		}
		if diff := cmp.Diff([]string{"S-7f3a2b", "S-7f3c00"}, amb.Candidates); diff != "" {
			t.Fatalf("GetRun(%q) candidates (-want +got):\n%s", ref, diff)
		}
		if !strings.Contains(err.Error(), "S-7f3a2b") || !strings.Contains(err.Error(), "S-7f3c00") {
			t.Fatalf("ambiguity error %q does not list the candidates", err)
		}
	}
	for _, ref := range []string{"S-999", "S-7f3a2b0", "beef", "S-%", "_", "%"} {
		_, err := s.GetRun(ctx(t), ref)
		wantErr(t, err, store.ErrNotFound)
	}
	for _, ref := range []string{"", "  ", "S-"} {
		_, err := s.GetRun(ctx(t), ref)
		wantPlainErr(t, err)
	}
}

func testListRuns(t *testing.T, s store.Store) {
	specs := []struct {
		parent string
		status lifecycle.Status
	}{
		{"ava:cli:p1", lifecycle.Success},
		{"ava:cli:p1", lifecycle.Running},
		{"ava:cli:p2", lifecycle.Pending},
		{"ava:cli:p1", lifecycle.Cancelled},
		{"ava:cli:p2", lifecycle.Running},
	}
	var all []store.Run // oldest first
	for i, sp := range specs {
		r := newRun(shortID(i+1), sp.parent)
		r.Status = sp.status
		r.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		if i%2 == 1 {
			r.Role = "reviewer"
		}
		all = append(all, createRun(t, s, r))
	}
	newest := func(idx ...int) []store.Run {
		var out []store.Run
		for _, i := range slices.Backward(idx) {
			out = append(out, all[i])
		}
		return out
	}
	for name, tc := range map[string]struct {
		f    store.RunFilter
		want []store.Run
	}{
		"all":             {store.RunFilter{}, newest(0, 1, 2, 3, 4)},
		"parent":          {store.RunFilter{ParentSession: "ava:cli:p1"}, newest(0, 1, 3)},
		"status":          {store.RunFilter{Status: []lifecycle.Status{lifecycle.Running, lifecycle.Success}}, newest(0, 1, 4)},
		"active":          {store.RunFilter{Active: true}, newest(1, 2, 4)},
		"active parent":   {store.RunFilter{Active: true, ParentSession: "ava:cli:p2"}, newest(2, 4)},
		"limit":           {store.RunFilter{Limit: 2}, newest(3, 4)},
		"status disjoint": {store.RunFilter{Active: true, Status: []lifecycle.Status{lifecycle.Success}}, nil},
		"role":            {store.RunFilter{Role: "reviewer"}, newest(1, 3)},
		"role and status": {store.RunFilter{Role: "reviewer", Status: []lifecycle.Status{lifecycle.Cancelled}}, newest(3)},
	} {
		got, err := s.ListRuns(ctx(t), tc.f)
		must(t, err)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Fatalf("ListRuns %s (-want +got):\n%s", name, diff)
		}
	}
	_, err := s.ListRuns(ctx(t), store.RunFilter{Status: []lifecycle.Status{"finished"}})
	wantPlainErr(t, err)
	_, err = s.ListRuns(ctx(t), store.RunFilter{Limit: -1})
	wantPlainErr(t, err)
}

func testUpdateRunProgress(t *testing.T, s store.Store) {
	r := createRun(t, s, newRun("S-0b0b0b", "ava:cli:p"))
	must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Pending}, lifecycle.Running, nil))
	must(t, s.UpdateRunProgress(ctx(t), r.ID, 1200, 3.5, 4))
	must(t, s.UpdateRunProgress(ctx(t), r.ShortID, 1500, 4.25, 5))
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if got.Tokens != 1500 || got.CostCents != 4.25 || got.Iterations != 5 {
		t.Fatalf("progress = %d tokens %v cents %d iterations, want 1500, 4.25, 5", got.Tokens, got.CostCents, got.Iterations)
	}
	finish(t, s, r.ID, lifecycle.Success)
	err = s.UpdateRunProgress(ctx(t), r.ID, 9999, 99, 99)
	wantErr(t, err, store.ErrInvalidTransition)
	if !strings.Contains(err.Error(), string(lifecycle.Success)) {
		t.Fatalf("late progress error %q does not name the status", err)
	}
	got, err = s.GetRun(ctx(t), r.ID)
	must(t, err)
	if got.Tokens != 10 || got.Iterations != 1 {
		t.Fatalf("a late progress update overwrote the final counters: %+v", got)
	}
	wantErr(t, s.UpdateRunProgress(ctx(t), uuid.NewString(), 1, 1, 1), store.ErrNotFound)
	wantPlainErr(t, s.UpdateRunProgress(ctx(t), r.ID, -1, 0, 0))
}

package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/store"
)

func pendingCases() []testCase {
	return []testCase{
		{"PendingCreateGetList", testPendingCreateGetList},
		{"PendingDecide", testPendingDecide},
		{"PendingDecideExpired", testPendingDecideExpired},
		{"ExpirePending", testExpirePending},
	}
}

// newPending returns a valid pending spawn created now that expires in
// ttl. The store checks expiry against the real clock.
func newPending(id, session string, ttl time.Duration) store.PendingSpawn {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return store.PendingSpawn{
		ID: id, SessionKey: session, Config: json.RawMessage(`{"role":"researcher","task":"t"}`),
		EstimateMinSeconds: 30, EstimateMaxSeconds: 120, MaxCostCents: 25,
		Tools: []string{"web_fetch", "web_search"}, Rationale: "needs browsing",
		Status: store.SpawnPending, CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(ttl),
	}
}

func testPendingCreateGetList(t *testing.T, s store.Store) {
	p1 := newPending("P-1", "ava:cli:a", time.Hour)
	p2 := newPending("P-2", "ava:cli:a", time.Hour)
	p2.CreatedAt = p1.CreatedAt.Add(time.Second)
	p2.Tools = nil
	p3 := newPending("P-3", "ava:cli:b", time.Hour)
	for _, p := range []store.PendingSpawn{p1, p2, p3} {
		must(t, s.CreatePending(ctx(t), p))
	}
	got, err := s.GetPending(ctx(t), "P-1")
	must(t, err)
	if diff := cmp.Diff(p1, got); diff != "" {
		t.Fatalf("GetPending (-want +got):\n%s", diff)
	}
	p2.Tools = []string{}
	list, err := s.ListPending(ctx(t), "ava:cli:a")
	must(t, err)
	if diff := cmp.Diff([]store.PendingSpawn{p1, p2}, list); diff != "" {
		t.Fatalf("ListPending (-want +got):\n%s", diff)
	}
	all, err := s.ListPending(ctx(t), "")
	must(t, err)
	if len(all) != 3 {
		t.Fatalf("ListPending(all) = %d spawns, want 3", len(all))
	}

	wantErr(t, s.CreatePending(ctx(t), p1), store.ErrDuplicate)
	_, err = s.GetPending(ctx(t), "P-404")
	wantErr(t, err, store.ErrNotFound)
	for name, mutate := range map[string]func(p *store.PendingSpawn){
		"no ID":         func(p *store.PendingSpawn) { p.ID = "" },
		"no session":    func(p *store.PendingSpawn) { p.SessionKey = "" },
		"no expiry":     func(p *store.PendingSpawn) { p.ExpiresAt = time.Time{} },
		"expiry first":  func(p *store.PendingSpawn) { p.ExpiresAt = p.CreatedAt.Add(-time.Second) },
		"min above max": func(p *store.PendingSpawn) { p.EstimateMinSeconds = 500 },
		"bad status":    func(p *store.PendingSpawn) { p.Status = "maybe" },
		"bad config":    func(p *store.PendingSpawn) { p.Config = []byte("{") },
		"negative cost": func(p *store.PendingSpawn) { p.MaxCostCents = -1 },
	} {
		p := newPending("P-bad", "ava:cli:a", time.Hour)
		mutate(&p)
		if err := s.CreatePending(ctx(t), p); err == nil {
			t.Fatalf("%s: CreatePending accepted %+v", name, p)
		}
	}
}

func testPendingDecide(t *testing.T, s store.Store) {
	must(t, s.CreatePending(ctx(t), newPending("P-yes", "ava:cli:a", time.Hour)))
	must(t, s.CreatePending(ctx(t), newPending("P-no", "ava:cli:a", time.Hour)))

	modified := json.RawMessage(`{"role":"researcher","task":"t","maxCostCents":10}`)
	must(t, s.DecidePending(ctx(t), "P-yes", store.SpawnConfirmed, modified, "run-uuid"))
	got, err := s.GetPending(ctx(t), "P-yes")
	must(t, err)
	if got.Status != store.SpawnConfirmed || string(got.Config) != string(modified) || got.RunID != "run-uuid" {
		t.Fatalf("confirmed spawn = status %s config %s run %q", got.Status, got.Config, got.RunID)
	}

	must(t, s.DecidePending(ctx(t), "P-no", store.SpawnRejected, nil, ""))
	got, err = s.GetPending(ctx(t), "P-no")
	must(t, err)
	if got.Status != store.SpawnRejected || string(got.Config) != `{"role":"researcher","task":"t"}` {
		t.Fatalf("rejected spawn = status %s config %s (config must stay)", got.Status, got.Config)
	}

	err = s.DecidePending(ctx(t), "P-yes", store.SpawnRejected, nil, "")
	wantErr(t, err, store.ErrInvalidTransition)
	if !strings.Contains(err.Error(), store.SpawnConfirmed) {
		t.Fatalf("second decision error %q does not name the status", err)
	}
	wantErr(t, s.DecidePending(ctx(t), "P-404", store.SpawnConfirmed, nil, ""), store.ErrNotFound)
	wantPlainErr(t, s.DecidePending(ctx(t), "P-no", "yes", nil, ""))
	list, err := s.ListPending(ctx(t), "ava:cli:a")
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("decided spawns still listed: %+v", list)
	}
}

func testPendingDecideExpired(t *testing.T, s store.Store) {
	p := newPending("P-late", "ava:cli:a", -time.Second)
	p.CreatedAt = p.ExpiresAt.Add(-time.Hour)
	must(t, s.CreatePending(ctx(t), p))
	list, err := s.ListPending(ctx(t), "ava:cli:a")
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("an expired spawn is listed as awaiting a decision: %+v", list)
	}
	wantErr(t, s.DecidePending(ctx(t), "P-late", store.SpawnConfirmed, nil, "r"), store.ErrExpired)
	got, err := s.GetPending(ctx(t), "P-late")
	must(t, err)
	if got.Status == store.SpawnConfirmed || got.RunID != "" {
		t.Fatalf("an expired spawn was confirmed: %+v", got)
	}
	// Once marked expired, a decision still says expired.
	marked, err := s.ExpirePending(ctx(t), time.Now())
	must(t, err)
	if n := len(marked); n > 1 {
		t.Fatalf("ExpirePending marked %d, want at most the 1 spawn", n)
	}
	wantErr(t, s.DecidePending(ctx(t), "P-late", store.SpawnRejected, nil, ""), store.ErrExpired)
}

func testExpirePending(t *testing.T, s store.Store) {
	now := time.Now().UTC()
	for i, ttl := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour} {
		p := newPending([]string{"P-a", "P-b", "P-c"}[i], "ava:cli:x", ttl)
		must(t, s.CreatePending(ctx(t), p))
	}
	must(t, s.CreatePending(ctx(t), newPending("P-decided", "ava:cli:x", time.Hour)))
	must(t, s.DecidePending(ctx(t), "P-decided", store.SpawnConfirmed, nil, ""))

	marked, err := s.ExpirePending(ctx(t), now.Add(2*time.Hour+time.Minute))
	must(t, err)
	if n := len(marked); n != 2 || marked[0].ID != "P-a" && marked[1].ID != "P-a" {
		t.Fatalf("ExpirePending marked %d (%v), want 2 with P-a", n, marked)
	}
	for _, p := range marked {
		if p.Status != store.SpawnExpired {
			t.Fatalf("ExpirePending returned %s as %s, want expired", p.ID, p.Status)
		}
	}
	for id, want := range map[string]string{
		"P-a": store.SpawnExpired, "P-b": store.SpawnExpired,
		"P-c": store.SpawnPending, "P-decided": store.SpawnConfirmed,
	} {
		got, err := s.GetPending(ctx(t), id)
		must(t, err)
		if got.Status != want {
			t.Fatalf("%s status = %s, want %s", id, got.Status, want)
		}
	}
	marked, err = s.ExpirePending(ctx(t), now.Add(2*time.Hour+time.Minute))
	must(t, err)
	if n := len(marked); n != 0 {
		t.Fatalf("second ExpirePending marked %d, want 0", n)
	}
}

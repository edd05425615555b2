package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/store"
)

// HookIDMigration tests the migration that gave hook deliveries their
// IDs for good and their run (SQLite 00016, PostgreSQL 00018) on a
// backend. The backend's test inserts Rows into a store at the version
// before it (created at Created), opens it (which migrates), inserts
// LateRow the way an ava older than the migration does (without an ID
// or a run, created now), and calls Check.
type HookIDMigration struct {
	// Created is when Rows were recorded.
	Created time.Time
	// Rows are an older store's deliveries: two of one run (its start
	// pending, its complete pending), a session's own (delivered), and
	// one whose body is not JSON (dead).
	Rows []LegacyHookRow
	// LateRow is written after the migration by an older ava.
	LateRow LegacyHookRow
}

// NewHookIDMigration returns the rows to insert.
func NewHookIDMigration() *HookIDMigration {
	row := func(seq int64, event, body, status string) LegacyHookRow {
		return LegacyHookRow{HookID: "h-000000000001", Kind: "url", Event: event, SessionKey: "ava:cli:ids", Seq: seq,
			Body: body, Status: status, MaxAttempts: 3}
	}
	return &HookIDMigration{
		Created: time.Date(2024, 6, 7, 3, 4, 5, 678_000_000, time.UTC),
		Rows: []LegacyHookRow{
			row(1, "subagent:start", `{"type":"agent_event","eventType":"subagent:start","jobId":"S-aaaaaa"}`, store.HookPending),
			row(2, "subagent:complete", `{"type":"agent_event","eventType":"subagent:complete","jobId":"S-aaaaaa","status":"success"}`, store.HookPending),
			row(3, "session:idle", `{"type":"agent_event","eventType":"session:idle","session":"ava:cli:ids"}`, store.HookDelivered),
			row(4, "proposal", `not JSON`, store.HookDead),
		},
		LateRow: row(9, "session:idle", `{"type":"agent_event","eventType":"session:idle"}`, store.HookPending),
	}
}

// Check verifies the migrated store s: every delivery has a distinct
// UUIDv7 ID, the older ones' time part their creation, the late one's
// now; the run of each is its body's jobId; and the run's complete is
// not claimed before its start is delivered.
func (m *HookIDMigration) Check(t *testing.T, s store.Store) {
	t.Helper()
	ds, err := s.HookDeliveries(ctx(t), store.HookFilter{})
	must(t, err)
	if len(ds) != len(m.Rows)+1 {
		t.Fatalf("after the migration %d deliveries, want %d", len(ds), len(m.Rows)+1)
	}
	wantRun := map[uint64]string{1: "S-aaaaaa", 2: "S-aaaaaa", 3: "", 4: "", 9: ""}
	seen := map[string]bool{}
	for _, d := range ds {
		u, err := uuid.Parse(d.ID)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != d.ID {
			t.Fatalf("delivery #%d has ID %q, want a lower-case UUIDv7 (%v)", d.Seq, d.ID, err)
		}
		if seen[d.ID] {
			t.Fatalf("ID %s given twice", d.ID)
		}
		seen[d.ID] = true
		at := time.Unix(u.Time().UnixTime())
		if d.Seq == uint64(m.LateRow.Seq) {
			if d := time.Since(at); d > time.Minute || d < -time.Minute {
				t.Errorf("the late delivery's ID %s has time %s, want about now", u, at)
			}
		} else if !at.Equal(m.Created.Truncate(time.Millisecond)) {
			t.Errorf("delivery #%d's ID %s has time %s, want its creation %s", d.Seq, u, at.UTC(), m.Created)
		}
		if d.Run != wantRun[d.Seq] {
			t.Errorf("delivery #%d's run %q, want %q", d.Seq, d.Run, wantRun[d.Seq])
		}
	}
	register(t, s, "after-migration")
	claimed, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: "after-migration", Hooks: []string{"h-000000000001"},
		Lease: time.Minute, Limit: 10})
	must(t, err)
	var seqs []uint64
	for _, d := range claimed {
		seqs = append(seqs, d.Seq)
	}
	if len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 9 {
		t.Fatalf("claimed #%v, want #1 (the run's start; its complete waits) and #9", seqs)
	}
}

package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUnannouncedUsesItsIndex: what every start and every recovery asks
// (the results still owed) is read through its partial index, whatever
// the number of runs the data root has kept.
func TestUnannouncedUsesItsIndex(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.reader.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+unannouncedSQL)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "; ")
	if !strings.Contains(got, "runs_unannounced") || strings.Contains(got, "TEMP B-TREE") {
		t.Fatalf("query plan %q: want the runs_unannounced index, in its order", got)
	}
}

// TestHookClaimUsesItsIndexes: a claim finds due deliveries by status
// and time, and each one's earlier deliveries of its run (the order
// check) through the run-order partial index, not by reading the table
// once per candidate.
func TestHookClaimUsesItsIndexes(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	args := []any{"owner", int64(2), int64(1), "pending", "failed", "host", "h-1", "h-2", 8}
	rows, err := s.reader.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+claimSQL(2, 0), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "; ")
	if !strings.Contains(got, "hook_deliveries_run_order") || strings.Contains(got, "SCAN e") {
		t.Fatalf("query plan %q: want the order check through hook_deliveries_run_order", got)
	}
}

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

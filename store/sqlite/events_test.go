package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/storetest"
)

// publisherEnv makes the test binary a second process publishing to the
// store at its value (see TestMain).
const publisherEnv = "AVA_TEST_EVENT_PUBLISHER"

// seqLoad publishes 100,000 events across 50 sessions, a tenth of that
// under the race detector (which makes it ~9x slower); .ci/run also runs
// the full count without it.
var seqLoad = storetest.Sequences{Sessions: 50, Workers: 20, PerWorker: seqPerWorker()}

// seqPerWorker is how many events each goroutine publishes.
func seqPerWorker() int {
	if raceEnabled {
		return 250
	}
	return 2_500
}

// publishFromChild is the second process's side: its own store handle
// and hub on the same file.
func publishFromChild(path string) int {
	return seqLoad.Child(func() (storetest.LogCloser, error) {
		return Open(context.Background(), path, Options{})
	})
}

// TestHundredThousandEventsTwoProcesses publishes 100,000 events (10,000
// under -race) across 50 sessions from concurrent goroutines in this
// process and in a second one, on one SQLite file: every session's
// numbers go 1, 2, 3, … with none reused or skipped.
func TestHundredThousandEventsTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 100,000 events")
	}
	path := filepath.Join(t.TempDir(), FileName)
	seqLoad.TwoProcesses(t, openAt(t, path), publisherEnv, path)
}

// numberedEvents returns events first…last of session, each with its
// own content.
func numberedEvents(session string, first, last uint64) []event.Event {
	var evs []event.Event
	for seq := first; seq <= last; seq++ {
		evs = append(evs, event.Event{Seq: seq, Time: time.Date(2026, 11, 26, 17, 0, 0, int(seq)*1e6, time.UTC),
			Session: session, Agent: "S-abc123", Type: event.ToolResult,
			Content: json.RawMessage(fmt.Sprintf(`{"n":%d,"text":"a <b> & c"}`, seq))})
	}
	return evs
}

// eventInserts returns the row counts of the INSERTs of events the
// store's writer connection has prepared, in increasing order.
func eventInserts(t *testing.T, s *Store) []int {
	t.Helper()
	c, err := s.writer.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var counts []int
	rawConn(t, c, func(cc *cachingConn) {
		for query := range cc.stmts {
			if strings.HasPrefix(query, "INSERT INTO events ") {
				counts = append(counts, strings.Count(query, "(?"))
			}
		}
	})
	slices.Sort(counts)
	return counts
}

// A batch of events is stored with one multi-row INSERT per chunk of 1,
// 2, 4, … 32 events (8 events: one statement; 37: 32 + 4 + 1), not one
// statement per event, and every event reads back as it was encoded.
func TestAppendEventsOneInsertPerChunk(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, filepath.Join(t.TempDir(), FileName))
	const session = "ava:subagent:S-abc123"
	evs := numberedEvents(session, 1, 45)
	if err := s.AppendEvents(ctx, evs[:8]); err != nil {
		t.Fatal(err)
	}
	if got := eventInserts(t, s); !slices.Equal(got, []int{8}) {
		t.Fatalf("8 events stored with INSERTs of %v rows, want one of 8", got)
	}
	if err := s.AppendEvents(ctx, evs[8:]); err != nil {
		t.Fatal(err)
	}
	if got := eventInserts(t, s); !slices.Equal(got, []int{1, 4, 8, 32}) {
		t.Fatalf("8 then 37 events stored with INSERTs of %v rows, want 8, then 32, 4 and 1", got)
	}
	var lines []string
	rows, err := s.reader.QueryContext(ctx, `SELECT line FROM events WHERE session_key = ? ORDER BY seq`, session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(evs) {
		t.Fatalf("%d events stored, want %d", len(lines), len(evs))
	}
	for i, ev := range evs {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if lines[i] != string(want) {
			t.Fatalf("event #%d stored as %s, want %s", ev.Seq, lines[i], want)
		}
	}
}

// A batch whose later chunk meets a taken number stores nothing of the
// batch, its earlier chunks included, and says the number is taken.
func TestAppendEventsTakenInLaterChunk(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, filepath.Join(t.TempDir(), FileName))
	const session = "ava:subagent:S-def456"
	taken := numberedEvents(session, 6, 6)
	if err := s.AppendEvents(ctx, taken); err != nil {
		t.Fatal(err)
	}
	err := s.AppendEvents(ctx, numberedEvents(session, 1, 6)) // chunks 1–4, then 5–6
	if !errors.Is(err, event.ErrSeqTaken) {
		t.Fatalf("append over a taken number: %v, want ErrSeqTaken", err)
	}
	got, err := s.ReadEvents(ctx, session, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Seq != 6 {
		t.Fatalf("after the refused batch the session holds %+v, want #6 alone", got)
	}
}

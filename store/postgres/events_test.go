package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/storetest"
)

// publisherEnv makes the test binary a second process publishing to the
// database at its value (see TestMain).
const publisherEnv = "AVA_TEST_PG_EVENT_PUBLISHER"

// seqLoad is the events published from each process.
var seqLoad = storetest.Sequences{Sessions: 10, Workers: 8, PerWorker: 150}

// publishFromChild is the second process's side: its own pool and hub on
// the same database.
func publishFromChild(url string) int {
	return seqLoad.Child(func() (storetest.LogCloser, error) {
		return postgres.Open(context.Background(), url, postgres.Options{})
	})
}

// TestEventsTwoProcesses publishes events to the same sessions from
// concurrent goroutines in this process and in a second one, on one
// database: every session's numbers go 1, 2, 3, … with none reused or
// skipped.
func TestEventsTwoProcesses(t *testing.T) {
	url := pgtest.URL(t)
	seqLoad.TwoProcesses(t, openAt(t, url), publisherEnv, url)
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

// countInserts makes the database at url record the row count of every
// INSERT statement on events (a statement-level trigger) and returns a
// function reading the counts recorded so far, in order.
func countInserts(t *testing.T, url string) func() []int {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `
		CREATE TABLE test_event_inserts (id BIGSERIAL PRIMARY KEY, n BIGINT NOT NULL);
		CREATE FUNCTION test_count_event_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO test_event_inserts (n) SELECT count(*) FROM new_rows;
			RETURN NULL;
		END $$;
		CREATE TRIGGER test_count_event_inserts AFTER INSERT ON events
			REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION test_count_event_insert();`); err != nil {
		t.Fatal(err)
	}
	return func() []int {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT n FROM test_event_inserts ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return counts
	}
}

// A batch of events is stored with one multi-row INSERT per chunk of 1,
// 2, 4, … 32 events (8 events: one statement; 37: 32 + 4 + 1), not one
// statement per event, and every event reads back as it was.
func TestAppendEventsOneInsertPerChunk(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	inserts := countInserts(t, url)
	s := openAt(t, url)
	const session = "ava:subagent:S-abc123"
	evs := numberedEvents(session, 1, 45)
	if err := s.AppendEvents(ctx, evs[:8]); err != nil {
		t.Fatal(err)
	}
	if got := inserts(); !slices.Equal(got, []int{8}) {
		t.Fatalf("8 events stored with INSERTs of %v rows, want one of 8", got)
	}
	if err := s.AppendEvents(ctx, evs[8:]); err != nil {
		t.Fatal(err)
	}
	if got := inserts(); !slices.Equal(got, []int{8, 32, 4, 1}) {
		t.Fatalf("8 then 37 events stored with INSERTs of %v rows, want 8, then 32, 4 and 1", got)
	}
	got, err := s.ReadEvents(ctx, session, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("%d events read back, want %d", len(got), len(evs))
	}
	for i, ev := range got {
		want, _ := json.Marshal(evs[i])
		line, _ := json.Marshal(ev)
		if string(line) != string(want) {
			t.Fatalf("event #%d read back as %s, want %s", evs[i].Seq, line, want)
		}
	}
}

// A batch whose later chunk meets a taken number stores nothing of the
// batch, its earlier chunks included, and says the number is taken.
func TestAppendEventsTakenInLaterChunk(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, pgtest.URL(t))
	const session = "ava:subagent:S-def456"
	if err := s.AppendEvents(ctx, numberedEvents(session, 6, 6)); err != nil {
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

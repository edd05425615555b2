package record

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// EventLine validates an event to append (its session key, its sequence
// number within int64) and returns it as the JSON line stored.
func EventLine(ev event.Event) (string, error) {
	if err := CheckKey("event session", ev.Session); err != nil {
		return "", fmt.Errorf("append event: %w", err)
	}
	if ev.Seq == 0 || ev.Seq > math.MaxInt64 {
		return "", fmt.Errorf("append event to %s: sequence number %d is out of range", ev.Session, ev.Seq)
	}
	line, err := ev.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("append event to %s: %w", ev.Session, err)
	}
	return string(line), nil
}

// MaxEventsPerInsert is the most events one INSERT stores: 192 bound
// values, far under either database's limit (SQLite's 32,766, 999 before
// 3.32; PostgreSQL's 65,535).
const MaxEventsPerInsert = 32

// eventColumns are an events row's columns, in the order of EventArgs.
const eventColumns = 6

// EventInserts returns the INSERT of 1, 2, 4, … MaxEventsPerInsert events
// (index: the base-2 logarithm of the count), placeholder(i) being the
// i-th bound value's (from 1). A batch of events is stored in chunks of
// these sizes only (EventChunk), so a connection's statement cache, keyed
// by text, holds six texts whatever the batches' lengths.
func EventInserts(placeholder func(i int) string) []string {
	var texts []string
	for n := 1; n <= MaxEventsPerInsert; n *= 2 {
		var b strings.Builder
		b.WriteString(eventInsertHead)
		for row := range n {
			if row > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for col := range eventColumns {
				if col > 0 {
					b.WriteString(", ")
				}
				b.WriteString(placeholder(row*eventColumns + col + 1))
			}
			b.WriteByte(')')
		}
		texts = append(texts, b.String())
	}
	return texts
}

// FencedEventInserts is EventInserts with the insert made conditional
// on an event fence's lease (event.Fence): the rows go in only if the
// run whose full ID is the value after the rows' (placeholder 6n+1) is
// active and owned by the one after it (6n+2), checked by the INSERT
// itself, so that an append under a lost lease stores nothing and costs
// no statement of its own. Its count of rows stored says which.
func FencedEventInserts(placeholder func(i int) string) []string {
	texts := EventInserts(placeholder)
	for i, text := range texts {
		n := 1 << i
		values := strings.TrimPrefix(text, eventInsertHead)
		texts[i] = eventInsertHead[:len(eventInsertHead)-len("VALUES ")] + `SELECT * FROM (VALUES ` + values + `)
			WHERE EXISTS (SELECT 1 FROM runs WHERE id = ` + placeholder(n*eventColumns+1) + ` AND owner = ` +
			placeholder(n*eventColumns+2) + ` AND status IN ` + ActiveStatuses + `)`
	}
	return texts
}

// eventInsertHead starts every INSERT of EventInserts.
const eventInsertHead = `INSERT INTO events (session_key, seq, type, agent, time, line) VALUES `

// EventChunk returns how many of n remaining events the next INSERT
// stores, the largest power of two at most n and MaxEventsPerInsert, and
// the index of its text in EventInserts.
func EventChunk(n int) (size, text int) {
	text = bits.Len(uint(min(n, MaxEventsPerInsert))) - 1
	return 1 << text, text
}

// EventArgs appends the bound values of ev's row, line being its
// EventLine, to args.
func EventArgs(args []any, ev event.Event, line string) []any {
	return append(args, ev.Session, int64(ev.Seq), string(ev.Type), ev.Agent, ToNS(ev.Time), line)
}

// EventFence returns the lease the events of one append are stored
// under (event.Fence.Leased), and whether there is one: every event of
// an append carries the same fence (the hub stores each run of events
// with one fence as one append), or the append is refused as malformed.
func EventFence(evs []event.Event) (event.Fence, bool, error) {
	f := evs[0].Fence
	for _, ev := range evs[1:] {
		if ev.Fence != f {
			return event.Fence{}, false, fmt.Errorf("append events to %s: two fences in one append (%+v and %+v)", ev.Session, f, ev.Fence)
		}
	}
	if !f.Leased() {
		return f, false, nil
	}
	if err := CheckKey("fenced event's run", f.Run); err != nil {
		return f, false, fmt.Errorf("append events to %s: %w", evs[0].Session, err)
	}
	return f, true, nil
}

// FenceQuery is the query that reads the run an event fence names, for
// its check (FenceHolds) in the write's own transaction: its short ID,
// status and owner, by full ID (placeholder p). lock is appended (a
// PostgreSQL row lock, so that no takeover or end commits between the
// check and the insert).
func FenceQuery(p, lock string) string {
	return `SELECT short_id, status, owner FROM runs WHERE id = ` + p + lock
}

// FenceHolds returns nil when a fenced append may store its events: its
// owner owns the run st and the run is active. Otherwise the error wraps
// event.ErrFenced and, for why, store.ErrStaleOwner (another owner) or
// store.ErrInvalidTransition (the run has ended). found false: no such
// run (store.ErrNotFound).
func FenceHolds(st RunState, found bool, f event.Fence) error {
	if !found {
		return fmt.Errorf("fenced event of run %s: %w: %w", f.Run, event.ErrFenced, store.ErrNotFound)
	}
	status := lifecycle.Status(st.Status)
	if !slices.Contains(lifecycle.Active, status) {
		return fmt.Errorf("run %s has ended (%s); its stream takes no more events from %s: %w: %w",
			st.Short, st.Status, ownerName(f.Owner), event.ErrFenced, store.ErrInvalidTransition)
	}
	if st.Owner != f.Owner {
		return fmt.Errorf("run %s is owned by %s, not %s; its events are refused: %w: %w",
			st.Short, ownerName(st.Owner), ownerName(f.Owner), event.ErrFenced, store.ErrStaleOwner)
	}
	return nil
}

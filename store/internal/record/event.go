package record

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/avaagent/ava/event"
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
		b.WriteString(`INSERT INTO events (session_key, seq, type, agent, time, line) VALUES `)
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

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/internal/record"
)

// LastSeq returns the highest sequence number stored for the session: the
// last event's, or the number an older data root recorded on the session.
func (s *Store) LastSeq(ctx context.Context, session string) (uint64, error) {
	if s.closed.Load() {
		return 0, event.ErrLogClosed
	}
	var last int64
	err := s.reader.QueryRowContext(ctx, `
		SELECT max(
			coalesce((SELECT max(seq) FROM events WHERE session_key = ?1), 0),
			coalesce((SELECT last_seq FROM sessions WHERE key = ?1), 0))`, session).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("last sequence number of %s: %w", session, err)
	}
	return uint64(last), nil
}

// insertEventsSQL holds the INSERTs of a chunk of events (see
// record.EventInserts), insertFencedEventsSQL the same conditional on a
// lease (record.FencedEventInserts).
var (
	insertEventsSQL       = record.EventInserts(func(int) string { return "?" })
	insertFencedEventsSQL = record.FencedEventInserts(func(int) string { return "?" })
)

// AppendEvents stores evs under their sequence numbers in one write: all
// of them, or none and an error, wrapping event.ErrSeqTaken when a number
// is already taken in its session. The events go in with as few
// statements as the chunk sizes allow (see insertEventsSQL): under many
// runs at once the writer, the one connection every write waits for,
// ran one statement per event.
//
// Events with a lease (event.Fence) are checked by their insert itself
// (record.FencedEventInserts), inside the writer's transaction, which no
// other write interleaves: when the lease's owner no longer owns the
// run, or the run is not active, nothing is stored and the error wraps
// event.ErrFenced. Concurrent appends of several runs share one
// transaction (the group commit), each in its own savepoint, so a
// refused one stores nothing and the others are stored.
func (s *Store) AppendEvents(ctx context.Context, evs []event.Event) error {
	if s.closed.Load() {
		return event.ErrLogClosed
	}
	if len(evs) == 0 {
		return nil
	}
	fence, fenced, err := record.EventFence(evs)
	if err != nil {
		return err
	}
	lines := make([]string, len(evs))
	for i, ev := range evs {
		line, err := record.EventLine(ev)
		if err != nil {
			return err
		}
		lines[i] = line
	}
	hooks := outboxOf(s.outbox, evs)
	if !fenced {
		fence = event.Fence{}
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := insertEvents(ctx, tx, evs, lines, fence); err != nil {
			return err
		}
		return s.insertHookDeliveries(ctx, tx, hooks)
	})
	return appendError(evs, err)
}

// checkFence checks a lease in a write's transaction, reading its run
// (see record.FenceHolds): nil when it holds, else why not.
func checkFence(ctx context.Context, tx *sql.Tx, f event.Fence) error {
	var st record.RunState
	err := tx.QueryRowContext(ctx, record.FenceQuery("?", ""), f.Run).Scan(&st.Short, &st.Status, &st.Owner)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read the fenced run %s: %w", f.Run, err)
	}
	return record.FenceHolds(st, err == nil, f)
}

// appendError is the error of an append of evs that failed with err
// (nil for none): a unique violation is the number taken.
func appendError(evs []event.Event, err error) error {
	first, last := evs[0], evs[len(evs)-1]
	if isUniqueViolation(err) {
		return fmt.Errorf("append events #%d–#%d to %s: %w", first.Seq, last.Seq, first.Session, event.ErrSeqTaken)
	}
	if err != nil {
		return fmt.Errorf("append events #%d–#%d to %s: %w", first.Seq, last.Seq, first.Session, err)
	}
	return nil
}

// insertEvents inserts evs, whose stored lines are lines, in tx: one
// multi-row INSERT per chunk (record.EventChunk). With a lease (fence
// set), the first chunk's INSERT is conditional on it
// (record.FencedEventInserts); one that stores nothing is the lease not
// holding, and the error says why. The later chunks need no condition:
// the writer's transaction holds the database's write lock throughout.
func insertEvents(ctx context.Context, tx *sql.Tx, evs []event.Event, lines []string, fence event.Fence) error {
	args := make([]any, 0, 6*min(len(evs), record.MaxEventsPerInsert)+2)
	for first := true; len(evs) > 0; first = false {
		n, text := record.EventChunk(len(evs))
		args = args[:0]
		for i, ev := range evs[:n] {
			args = record.EventArgs(args, ev, lines[i])
		}
		query := insertEventsSQL[text]
		leased := first && fence.Leased()
		if leased {
			query, args = insertFencedEventsSQL[text], append(args, fence.Run, fence.Owner)
		}
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if leased {
			if stored, err := res.RowsAffected(); err != nil {
				return err
			} else if stored == 0 {
				if err := checkFence(ctx, tx, fence); err != nil {
					return err
				}
				return fmt.Errorf("fenced events of run %s: %w", fence.Run, event.ErrFenced) // cannot be: the insert saw the same run
			}
		}
		evs, lines = evs[n:], lines[n:]
	}
	return nil
}

// ReadEvents returns up to limit (0: all) of the session's events
// numbered after after, in order.
func (s *Store) ReadEvents(ctx context.Context, session string, after uint64, limit int) ([]event.Event, error) {
	if after > math.MaxInt64 {
		return nil, nil
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT line FROM events WHERE session_key = ? AND seq > ? ORDER BY seq LIMIT ?`,
		session, int64(after), limit)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	defer rows.Close()
	var out []event.Event
	for rows.Next() {
		var line []byte
		if err := rows.Scan(&line); err != nil {
			return nil, fmt.Errorf("read events of %s: %w", session, err)
		}
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("read events of %s: stored event after #%d: %w", session, after, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	return out, nil
}

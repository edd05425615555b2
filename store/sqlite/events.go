package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

	"github.com/avaagent/ava/event"
)

// LastSeq returns the highest sequence number stored for the session: the
// last event's, or the number an older data root recorded on the session.
func (s *Store) LastSeq(ctx context.Context, session string) (uint64, error) {
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

// AppendEvent stores ev under its sequence number, or returns an error
// wrapping event.ErrSeqTaken when the session already has that number.
func (s *Store) AppendEvent(ctx context.Context, ev event.Event) error {
	if err := checkKey("event session", ev.Session); err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	if ev.Seq == 0 || ev.Seq > math.MaxInt64 {
		return fmt.Errorf("append event to %s: sequence number %d is out of range", ev.Session, ev.Seq)
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("append event to %s: %w", ev.Session, err)
	}
	stmt, err := s.eventInsert(ctx)
	if err != nil {
		return fmt.Errorf("append event to %s: %w", ev.Session, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, ev.Session, int64(ev.Seq), string(ev.Type), ev.Agent, toNS(ev.Time), string(line))
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("append event #%d to %s: %w", ev.Seq, ev.Session, event.ErrSeqTaken)
	}
	if err != nil {
		return fmt.Errorf("append event #%d to %s: %w", ev.Seq, ev.Session, err)
	}
	return nil
}

// eventInsert returns the prepared insert of AppendEvent.
func (s *Store) eventInsert(ctx context.Context) (*sql.Stmt, error) {
	s.insertEventOnce.Do(func() {
		s.insertEvent, s.insertEventErr = s.writer.PrepareContext(ctx,
			`INSERT INTO events (session_key, seq, type, agent, time, line) VALUES (?, ?, ?, ?, ?, ?)`)
	})
	if s.insertEventErr != nil {
		return nil, fmt.Errorf("prepare event insert: %w", s.insertEventErr)
	}
	return s.insertEvent, nil
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

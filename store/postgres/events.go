package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// LastSeq returns the highest sequence number stored for the session: the
// last event's, or the number an older data root recorded on the session.
func (s *Store) LastSeq(ctx context.Context, session string) (uint64, error) {
	if s.closed.Load() {
		return 0, event.ErrLogClosed
	}
	var last int64
	err := s.pool.QueryRow(ctx, `
		SELECT GREATEST(
			coalesce((SELECT max(seq) FROM events WHERE session_key = $1), 0),
			coalesce((SELECT last_seq FROM sessions WHERE key = $1), 0))`, session).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("last sequence number of %s: %w", session, err)
	}
	return uint64(last), nil
}

// insertEventsSQL holds the INSERTs of a chunk of events (see
// record.EventInserts).
var insertEventsSQL = record.EventInserts(func(i int) string { return "$" + strconv.Itoa(i) })

// AppendEvents stores evs under their sequence numbers in one
// transaction: all of them, or none and an error, wrapping
// event.ErrSeqTaken when a number is already taken in its session. Of two
// processes inserting the same number at once, the second waits for the
// first to commit and then gets the unique violation (or succeeds, if the
// first rolled back), so numbers stay unique and gap-free. The events go
// in with one multi-row INSERT per chunk (record.EventChunk), all in one
// batch (one round trip).
//
// Events with a lease (event.Fence) are checked in the same transaction:
// the batch first reads the run's row FOR SHARE, which waits for any
// transaction changing its owner or status (a takeover, an end) and
// keeps the next one waiting until this one commits, so that no event
// lands after a takeover or an end that committed first. When the
// lease's owner no longer owns the run, or the run is not active,
// nothing is stored and the error wraps event.ErrFenced.
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
	chunks, err := eventChunks(evs)
	if err != nil {
		return err
	}
	hooks := outboxOf(s.outbox, evs)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		if fenced {
			b.Queue(record.FenceQuery("$1", " FOR SHARE"), fence.Run)
		}
		s.queueEvents(b, evs, chunks, hooks)
		br := tx.SendBatch(ctx, b)
		if fenced {
			if err := fenceHolds(br.QueryRow(), fence); err != nil {
				_ = br.Close()
				return err
			}
		}
		return br.Close()
	})
	return appendError(evs, err)
}

// queueEvents adds to b the inserts of evs (as chunks), their hook
// deliveries and the notification of their storing: one round trip.
func (s *Store) queueEvents(b *pgx.Batch, evs []event.Event, chunks []eventChunk, hooks []store.HookDelivery) {
	for _, c := range chunks {
		b.Queue(c.query, c.args...)
	}
	s.queueHookDeliveries(b, hooks)
	// The notification rides in the same batch (no round trip of its
	// own) and is sent on commit only. A session key of kilobytes sends
	// none: its followers elsewhere catch up later.
	last := evs[len(evs)-1]
	if note := storedPayload(last.Session, last.Seq); len(note) <= MaxPayload {
		b.Queue(`SELECT pg_notify($1, $2)`, ChannelEvents, note)
	}
}

// fenceHolds reads the fenced run's row (record.FenceQuery) and checks
// the lease against it (record.FenceHolds).
func fenceHolds(row pgx.Row, f event.Fence) error {
	var st record.RunState
	err := row.Scan(&st.Short, &st.Status, &st.Owner)
	if err != nil && !noRows(err) {
		return fmt.Errorf("read the fenced run %s: %w", f.Run, err)
	}
	return record.FenceHolds(st, err == nil, f)
}

// appendError is the error of an append of evs that failed with err
// (nil for none): a unique violation is the number taken.
func appendError(evs []event.Event, err error) error {
	first, last := evs[0], evs[len(evs)-1]
	if _, taken := uniqueViolation(err); taken {
		return fmt.Errorf("append events #%d–#%d to %s: %w", first.Seq, last.Seq, first.Session, event.ErrSeqTaken)
	}
	if err != nil {
		return fmt.Errorf("append events #%d–#%d to %s: %w", first.Seq, last.Seq, first.Session, err)
	}
	return nil
}

// eventChunk is one multi-row INSERT of events and its bound values.
type eventChunk struct {
	query string
	args  []any
}

// eventChunks validates and encodes evs and splits them into INSERTs of
// record.EventChunk's sizes.
func eventChunks(evs []event.Event) ([]eventChunk, error) {
	var chunks []eventChunk
	for len(evs) > 0 {
		n, text := record.EventChunk(len(evs))
		c := eventChunk{query: insertEventsSQL[text], args: make([]any, 0, 6*n)}
		for _, ev := range evs[:n] {
			line, err := record.EventLine(ev)
			if err != nil {
				return nil, err
			}
			c.args = record.EventArgs(c.args, ev, line)
		}
		chunks = append(chunks, c)
		evs = evs[n:]
	}
	return chunks, nil
}

// storedPayload is the ChannelEvents notification of a session's events
// stored up to last: the number first, so the key may hold anything.
func storedPayload(session string, last uint64) string {
	return strconv.FormatUint(last, 10) + " " + session
}

// parseStored reads a ChannelEvents payload.
func parseStored(payload string) (session string, last uint64, err error) {
	num, session, ok := strings.Cut(payload, " ")
	if !ok {
		return "", 0, fmt.Errorf("stored events notification %q: no session", payload)
	}
	last, err = strconv.ParseUint(num, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("stored events notification %q: %w", payload, err)
	}
	return session, last, nil
}

// ReadEvents returns up to limit (0: all) of the session's events
// numbered after after, in order.
func (s *Store) ReadEvents(ctx context.Context, session string, after uint64, limit int) ([]event.Event, error) {
	if after > math.MaxInt64 {
		return nil, nil
	}
	var p params
	q := `SELECT line FROM events WHERE session_key = ` + p.add(session) + ` AND seq > ` + p.add(int64(after)) + ` ORDER BY seq`
	if limit > 0 {
		q += ` LIMIT ` + p.add(limit)
	}
	rows, err := s.pool.Query(ctx, q, p...)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	defer rows.Close()
	var out []event.Event
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, fmt.Errorf("read events of %s: %w", session, err)
		}
		var ev event.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil, fmt.Errorf("read events of %s: stored event after #%d: %w", session, after, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	return out, nil
}

package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/store/internal/record"
)

// The events table is the audit log of the cluster (migration 00008).
var _ audit.EventSource = (*Store)(nil)

// AuditEvents returns one page of stored events matching p, ordered by
// time, then by the order in which they were stored.
func (s *Store) AuditEvents(ctx context.Context, p audit.EventPage) ([]audit.StoredEvent, error) {
	q, args := auditEventsQuery(p)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read audit events: %w", err)
	}
	defer rows.Close()
	var out []audit.StoredEvent
	for rows.Next() {
		var e audit.StoredEvent
		var seq int64
		var line string
		if err := rows.Scan(&e.Key.ID, &e.Key.Time, &e.Session, &seq, &line); err != nil {
			return nil, fmt.Errorf("read audit events: %w", err)
		}
		e.Seq, e.Line = uint64(seq), []byte(line)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read audit events: %w", err)
	}
	return out, nil
}

// auditEventsQuery builds AuditEvents' statement.
func auditEventsQuery(p audit.EventPage) (string, params) {
	var args params
	where := []string{"TRUE"}
	if len(p.Types) > 0 {
		types := make([]string, len(p.Types))
		for i, t := range p.Types {
			types[i] = string(t)
		}
		where = append(where, "type = ANY("+args.add(types)+")")
	}
	if p.Agent != "" {
		where = append(where, `agent COLLATE "C" = `+args.add(p.Agent))
	}
	if p.Session != "" {
		where = append(where, "session_key = "+args.add(p.Session))
	}
	if !p.Since.IsZero() {
		where = append(where, "time >= "+args.add(record.ToNS(p.Since)))
	}
	if !p.Until.IsZero() {
		where = append(where, "time <= "+args.add(record.ToNS(p.Until)))
	}
	if p.From > 0 {
		where = append(where, "xid >= "+args.add(strconv.FormatUint(p.From, 10))+"::xid8")
	}
	if p.To > 0 {
		where = append(where, "xid < "+args.add(strconv.FormatUint(p.To, 10))+"::xid8")
	}
	order, cmp := "time, id", ">"
	if p.Desc {
		order, cmp = "time DESC, id DESC", "<"
	}
	if p.After != nil {
		where = append(where, "(time, id) "+cmp+" ("+args.add(p.After.Time)+"::bigint, "+args.add(p.After.ID)+"::bigint)")
	}
	q := "SELECT id, time, session_key, seq, line FROM events WHERE " + strings.Join(where, " AND ") + " ORDER BY " + order
	if p.Limit > 0 {
		q += " LIMIT " + args.add(p.Limit)
	}
	return q, args
}

// EventCursor returns the oldest transaction still running (or the next
// one, when none is): every event stored by an earlier transaction is
// committed or rolled back for good, and every event stored from now on
// has a transaction ID at or after it.
func (s *Store) EventCursor(ctx context.Context) (uint64, error) {
	var xmin string
	if err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text`).Scan(&xmin); err != nil {
		return 0, fmt.Errorf("event cursor: %w", err)
	}
	n, err := strconv.ParseUint(xmin, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("event cursor %q: %w", xmin, err)
	}
	return n, nil
}

// Agents returns the distinct agents with stored events whose ID starts
// with prefix (ASCII), sorted, at most limit of them.
func (s *Store) Agents(ctx context.Context, prefix string, limit int) ([]string, error) {
	var args params
	q := `SELECT DISTINCT agent COLLATE "C" FROM events WHERE agent COLLATE "C" >= ` + args.add(prefix)
	if hi, ok := prefixEnd(prefix); ok {
		q += ` AND agent COLLATE "C" < ` + args.add(hi)
	}
	q += ` ORDER BY 1 LIMIT ` + args.add(max(limit, 1))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("agents starting with %q: %w", prefix, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("agents starting with %q: %w", prefix, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("agents starting with %q: %w", prefix, err)
	}
	return out, nil
}

// prefixEnd is the least string above every string that starts with
// prefix, when prefix ends in an ASCII character below DEL (subagent ID
// prefixes always do).
func prefixEnd(prefix string) (string, bool) {
	n := len(prefix)
	if n == 0 || prefix[n-1] >= 0x7e {
		return "", false
	}
	return prefix[:n-1] + string(prefix[n-1]+1), true
}

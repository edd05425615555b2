package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// ClaimReport claims the report the session owes for its background
// results (see store.ReportStore).
func (s *Store) ClaimReport(ctx context.Context, key string) (int64, bool, error) {
	if err := record.CheckKey("session key", key); err != nil {
		return 0, false, fmt.Errorf("claim report: %w", err)
	}
	var through int64
	var claimed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		var role string
		err := tx.QueryRowContext(ctx, `SELECT id, role FROM messages WHERE session_key = ? ORDER BY id DESC LIMIT 1`, key).Scan(&id, &role)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the last message: %w", err)
		}
		if role != store.RoleSubagent {
			return nil // answered since: a turn's messages follow the results
		}
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET reported_through = ? WHERE key = ? AND reported_through < ?`, id, key, id)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		through, claimed = id, n == 1
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("claim the report of session %s: %w", key, err)
	}
	return through, claimed, nil
}

// UnreportedSessions lists the sessions owed a report whose newest result
// was stored before before (see store.ReportStore).
func (s *Store) UnreportedSessions(ctx context.Context, before time.Time) ([]string, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT s.key FROM sessions s INDEXED BY sessions_unreported
		JOIN messages m ON m.id = s.last_result_id
		WHERE s.last_result_id > s.reported_through AND m.created_at < ?
		ORDER BY s.key`, record.ToNS(before))
	if err != nil {
		return nil, fmt.Errorf("list sessions owed a report: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("list sessions owed a report: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions owed a report: %w", err)
	}
	return out, nil
}

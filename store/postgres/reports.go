package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		var role string
		err := tx.QueryRow(ctx, `SELECT id, role FROM messages WHERE session_key = $1 ORDER BY id DESC LIMIT 1`, key).Scan(&id, &role)
		if noRows(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the last message: %w", err)
		}
		if role != store.RoleSubagent {
			return nil // answered since: a turn's messages follow the results
		}
		tag, err := tx.Exec(ctx, `UPDATE sessions SET reported_through = $1 WHERE key = $2 AND reported_through < $1`, id, key)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		through, claimed = id, tag.RowsAffected() == 1
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
	rows, err := s.pool.Query(ctx, `SELECT s.key FROM sessions s
		JOIN messages m ON m.id = s.last_result_id
		WHERE s.last_result_id > s.reported_through AND m.created_at < $1
		ORDER BY s.key`, record.ToNS(before))
	if err != nil {
		return nil, fmt.Errorf("list sessions owed a report: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list sessions owed a report: %w", err)
	}
	return keys, nil
}

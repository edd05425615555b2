package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// defaultHookLimit caps a claim or a listing without a limit.
const defaultHookLimit = 100

// outboxOf is the hook deliveries of evs (record.Outbox).
func outboxOf(o store.Outbox, evs []event.Event) []store.HookDelivery { return record.Outbox(o, evs) }

// insertHookDeliveries records new deliveries in tx; one a hook already
// has for its event is left as it is.
func (s *Store) insertHookDeliveries(ctx context.Context, tx *sql.Tx, ds []store.HookDelivery) error {
	if len(ds) == 0 {
		return nil
	}
	now := record.ToNS(s.now())
	for _, d := range ds {
		d.Body = string(s.rec.Mask.JSON(json.RawMessage(d.Body)))
		if _, err := tx.ExecContext(ctx, `INSERT INTO hook_deliveries (`+record.HookInsertColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_key, seq, hook_id) DO NOTHING`,
			record.HookArgs(d, now)...); err != nil {
			return fmt.Errorf("record hook delivery of %s #%d to %s: %w", d.SessionKey, d.Seq, d.HookID, err)
		}
	}
	return nil
}

// ClaimHookDeliveries implements store.HookStore. A lease is live
// while its owner is registered in instances and lease_until has not
// passed; a delivery of a run waits while an earlier one of its hook,
// run and host is pending or failed (hook_deliveries_run_order).
func (s *Store) ClaimHookDeliveries(ctx context.Context, c store.HookClaim) ([]store.HookDelivery, error) {
	if len(c.Hooks) == 0 || c.Owner == "" {
		return nil, nil
	}
	limit := c.Limit
	if limit <= 0 {
		limit = 16
	}
	now := s.now()
	args := []any{c.Owner, record.ToNS(now.Add(c.Lease)), record.ToNS(now), store.HookPending, store.HookFailed, c.Host}
	args = append(args, stringArgs(c.Hooks)...)
	args = append(args, int64Args(c.Rows)...)
	args = append(args, limit)
	var out []store.HookDelivery
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE hook_deliveries SET lease_owner = ?1, lease_until = ?2, updated_at = ?3
			WHERE id IN (`+claimSQL(len(c.Hooks), len(c.Rows))+`) RETURNING `+record.HookColumns, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = record.Collect(rows, record.ScanHook)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim hook deliveries: %w", err)
	}
	return out, nil
}

// claimSQL selects the rows a claim takes, of hooks hook IDs and, when
// rows > 0, of that many row numbers. Its arguments: ?3 now, ?4 and ?5
// the pending and failed statuses, ?6 the claiming host, then the hook
// IDs, the rows and the limit.
func claimSQL(hooks, rows int) string {
	q := `SELECT d.id FROM hook_deliveries d
		WHERE d.status IN (?4, ?5) AND d.next_at <= ?3 AND (d.kind = 'url' OR d.host = ?6)
		AND (d.lease_until <= ?3 OR NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = d.lease_owner))
		AND NOT EXISTS (SELECT 1 FROM hook_deliveries e
			WHERE d.run_id <> '' AND e.hook_id = d.hook_id AND e.run_id = d.run_id AND e.host = d.host
				AND e.id < d.id AND e.status IN ('pending', 'failed') AND e.run_id <> '')
		AND d.hook_id IN (` + placeholders(hooks) + `)`
	if rows > 0 {
		q += ` AND d.id IN (` + placeholders(rows) + `)`
	}
	return q + ` ORDER BY d.next_at, d.id LIMIT ?`
}

// FinishHookDelivery implements store.HookStore.
func (s *Store) FinishHookDelivery(ctx context.Context, row int64, a store.HookAttempt) error {
	now := record.ToNS(s.now())
	var delivered sql.NullInt64
	if a.Status == store.HookDelivered {
		delivered = sql.NullInt64{Int64: now, Valid: true}
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE hook_deliveries SET status = ?, attempts = attempts + 1, next_at = ?,
			last_error = ?, lease_owner = '', lease_until = 0, updated_at = ?, delivered_at = ?
			WHERE id = ? AND lease_owner = ?`,
			a.Status, record.ToNS(a.NextAt), s.rec.Mask.Text(a.Error), now, delivered, row, a.Owner)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("record hook delivery %d: %w", row, err)
	}
	if n == 0 {
		return fmt.Errorf("record hook delivery %d: not held by %s: %w", row, a.Owner, store.ErrStaleOwner)
	}
	return nil
}

// HookDeliveries implements store.HookStore.
func (s *Store) HookDeliveries(ctx context.Context, f store.HookFilter) ([]store.HookDelivery, error) {
	q := `SELECT ` + record.HookColumns + ` FROM hook_deliveries WHERE 1 = 1`
	var args []any
	if len(f.Status) > 0 {
		q += ` AND status IN (` + placeholders(len(f.Status)) + `)`
		args = append(args, stringArgs(f.Status)...)
	}
	if len(f.Rows) > 0 {
		q += ` AND id IN (` + placeholders(len(f.Rows)) + `)`
		args = append(args, int64Args(f.Rows)...)
	}
	if f.ID != "" {
		lo, hi := record.DeliveryIDRange(f.ID)
		q += ` AND delivery_id >= ? AND delivery_id < ?`
		args = append(args, lo, hi)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultHookLimit
	}
	rows, err := s.reader.QueryContext(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list hook deliveries: %w", err)
	}
	defer rows.Close()
	out, err := record.Collect(rows, record.ScanHook)
	if err != nil {
		return nil, fmt.Errorf("list hook deliveries: %w", err)
	}
	return out, nil
}

// RetryHookDeliveries implements store.HookStore.
func (s *Store) RetryHookDeliveries(ctx context.Context, rows []int64, statuses []string) ([]int64, error) {
	now := record.ToNS(s.now())
	args := []any{store.HookPending, now, store.HookFailed, store.HookDead}
	q := `UPDATE hook_deliveries SET status = ?, attempts = 0, next_at = ?2, updated_at = ?2, lease_owner = '', lease_until = 0
		WHERE status IN (?, ?)`
	switch {
	case len(rows) > 0:
		q += ` AND id IN (` + placeholders(len(rows)) + `)`
		args = append(args, int64Args(rows)...)
	case len(statuses) > 0:
		q += ` AND status IN (` + placeholders(len(statuses)) + `)`
		args = append(args, stringArgs(statuses)...)
	default:
		return nil, nil
	}
	var out []int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q+` RETURNING id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = record.Collect(rows, func(sc record.Scanner) (int64, error) {
			var id int64
			return id, sc.Scan(&id)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retry hook deliveries: %w", err)
	}
	return out, nil
}

// CountHookDeliveries implements store.HookStore.
func (s *Store) CountHookDeliveries(ctx context.Context) (map[string]int, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT status, count(*) FROM hook_deliveries GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count hook deliveries: %w", err)
	}
	defer rows.Close()
	out, err := record.CountByStatus(rows)
	if err != nil {
		return nil, fmt.Errorf("count hook deliveries: %w", err)
	}
	return out, nil
}

// int64Args converts row numbers to query arguments.
func int64Args(rows []int64) []any {
	args := make([]any, len(rows))
	for i, r := range rows {
		args[i] = r
	}
	return args
}

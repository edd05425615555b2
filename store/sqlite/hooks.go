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
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_key, seq, hook_id) DO NOTHING`,
			record.HookArgs(d, now)...); err != nil {
			return fmt.Errorf("record hook delivery of %s #%d to %s: %w", d.SessionKey, d.Seq, d.HookID, err)
		}
	}
	return nil
}

// ClaimHookDeliveries implements store.HookStore.
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
	where := `status IN (?4, ?5) AND next_at <= ?3 AND lease_until <= ?3 AND (kind = 'url' OR host = ?6)
		AND hook_id IN (` + placeholders(len(c.Hooks)) + `)`
	args = append(args, stringArgs(c.Hooks)...)
	if len(c.IDs) > 0 {
		where += ` AND id IN (` + placeholders(len(c.IDs)) + `)`
		args = append(args, int64Args(c.IDs)...)
	}
	args = append(args, limit)
	var out []store.HookDelivery
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE hook_deliveries SET lease_owner = ?1, lease_until = ?2, updated_at = ?3
			WHERE id IN (SELECT id FROM hook_deliveries WHERE `+where+` ORDER BY next_at, id LIMIT ?)
			RETURNING `+record.HookColumns, args...)
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

// FinishHookDelivery implements store.HookStore.
func (s *Store) FinishHookDelivery(ctx context.Context, id int64, a store.HookAttempt) error {
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
			a.Status, record.ToNS(a.NextAt), s.rec.Mask.Text(a.Error), now, delivered, id, a.Owner)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("record hook delivery %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("record hook delivery %d: not held by %s: %w", id, a.Owner, store.ErrStaleOwner)
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
	if len(f.IDs) > 0 {
		q += ` AND id IN (` + placeholders(len(f.IDs)) + `)`
		args = append(args, int64Args(f.IDs)...)
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
func (s *Store) RetryHookDeliveries(ctx context.Context, ids []int64, statuses []string) ([]int64, error) {
	now := record.ToNS(s.now())
	args := []any{store.HookPending, now, store.HookFailed, store.HookDead}
	q := `UPDATE hook_deliveries SET status = ?, attempts = 0, next_at = ?2, updated_at = ?2, lease_owner = '', lease_until = 0
		WHERE status IN (?, ?)`
	switch {
	case len(ids) > 0:
		q += ` AND id IN (` + placeholders(len(ids)) + `)`
		args = append(args, int64Args(ids)...)
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

// int64Args converts IDs to query arguments.
func int64Args(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

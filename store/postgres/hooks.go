package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// defaultHookLimit caps a claim or a listing without a limit.
const defaultHookLimit = 100

// outboxOf is the hook deliveries of evs (record.Outbox).
func outboxOf(o store.Outbox, evs []event.Event) []store.HookDelivery { return record.Outbox(o, evs) }

// queueHookDeliveries adds the inserts of new deliveries to b (the
// events' batch, so one transaction); one a hook already has for its
// event is left as it is.
func (s *Store) queueHookDeliveries(b *pgx.Batch, ds []store.HookDelivery) {
	now := record.ToNS(s.now())
	for _, d := range ds {
		d.Body = string(s.rec.Mask.JSON(json.RawMessage(d.Body)))
		b.Queue(`INSERT INTO hook_deliveries (`+record.HookInsertColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (session_key, seq, hook_id) DO NOTHING`, record.HookArgs(d, now)...)
	}
}

// ClaimHookDeliveries implements store.HookStore. SKIP LOCKED lets
// processes claiming at once each take other rows.
func (s *Store) ClaimHookDeliveries(ctx context.Context, c store.HookClaim) ([]store.HookDelivery, error) {
	if len(c.Hooks) == 0 || c.Owner == "" {
		return nil, nil
	}
	limit := c.Limit
	if limit <= 0 {
		limit = 16
	}
	now := s.now()
	q := `UPDATE hook_deliveries SET lease_owner = $1, lease_until = $2, updated_at = $3
		WHERE id IN (SELECT id FROM hook_deliveries
			WHERE status IN ($4, $5) AND next_at <= $3 AND lease_until <= $3 AND (kind = 'url' OR host = $6)
			AND hook_id = ANY($7) AND (cardinality($8::bigint[]) = 0 OR id = ANY($8))
			ORDER BY next_at, id LIMIT $9 FOR UPDATE SKIP LOCKED)
		RETURNING ` + record.HookColumns
	ids := c.IDs
	if ids == nil {
		ids = []int64{}
	}
	var out []store.HookDelivery
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, c.Owner, record.ToNS(now.Add(c.Lease)), record.ToNS(now),
			store.HookPending, store.HookFailed, c.Host, c.Hooks, ids, limit)
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
	if s.closed.Load() {
		return store.ErrClosed
	}
	now := record.ToNS(s.now())
	var delivered sql.NullInt64
	if a.Status == store.HookDelivered {
		delivered = sql.NullInt64{Int64: now, Valid: true}
	}
	tag, err := s.pool.Exec(ctx, `UPDATE hook_deliveries SET status = $1, attempts = attempts + 1, next_at = $2,
		last_error = $3, lease_owner = '', lease_until = 0, updated_at = $4, delivered_at = $5
		WHERE id = $6 AND lease_owner = $7`,
		a.Status, record.ToNS(a.NextAt), s.rec.Mask.Text(a.Error), now, delivered, id, a.Owner)
	if err != nil {
		return fmt.Errorf("record hook delivery %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("record hook delivery %d: not held by %s: %w", id, a.Owner, store.ErrStaleOwner)
	}
	return nil
}

// HookDeliveries implements store.HookStore.
func (s *Store) HookDeliveries(ctx context.Context, f store.HookFilter) ([]store.HookDelivery, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultHookLimit
	}
	statuses, ids := f.Status, f.IDs
	if statuses == nil {
		statuses = []string{}
	}
	if ids == nil {
		ids = []int64{}
	}
	rows, err := s.pool.Query(ctx, `SELECT `+record.HookColumns+` FROM hook_deliveries
		WHERE (cardinality($1::text[]) = 0 OR status = ANY($1)) AND (cardinality($2::bigint[]) = 0 OR id = ANY($2))
		ORDER BY id DESC LIMIT $3`, statuses, ids, limit)
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
	if len(ids) == 0 && len(statuses) == 0 {
		return nil, nil
	}
	if ids == nil {
		ids = []int64{}
	}
	if statuses == nil {
		statuses = []string{}
	}
	now := record.ToNS(s.now())
	rows, err := s.pool.Query(ctx, `UPDATE hook_deliveries SET status = $1, attempts = 0, next_at = $2, updated_at = $2,
		lease_owner = '', lease_until = 0
		WHERE status IN ($3, $4) AND (cardinality($5::bigint[]) > 0 AND id = ANY($5)
			OR cardinality($5::bigint[]) = 0 AND status = ANY($6))
		RETURNING id`, store.HookPending, now, store.HookFailed, store.HookDead, ids, statuses)
	if err != nil {
		return nil, fmt.Errorf("retry hook deliveries: %w", err)
	}
	defer rows.Close()
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("retry hook deliveries: %w", err)
	}
	return out, nil
}

// CountHookDeliveries implements store.HookStore.
func (s *Store) CountHookDeliveries(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM hook_deliveries GROUP BY status`)
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

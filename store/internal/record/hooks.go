package record

import (
	"database/sql"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
)

// HookColumns are the columns ScanHook reads, in its order.
const HookColumns = `id, hook_id, kind, event, session_key, seq, body, host, status, attempts,
	max_attempts, next_at, lease_owner, lease_until, last_error, created_at, updated_at, delivered_at`

// HookInsertColumns are the columns a new delivery is inserted with.
const HookInsertColumns = `hook_id, kind, event, session_key, seq, body, host, status, max_attempts,
	next_at, created_at, updated_at`

// HookArgs are a new delivery's values for HookInsertColumns, its
// times defaulting to now.
func HookArgs(d store.HookDelivery, now int64) []any {
	next := now
	if !d.NextAt.IsZero() {
		next = ToNS(d.NextAt)
	}
	status := d.Status
	if status == "" {
		status = store.HookPending
	}
	return []any{d.HookID, d.Kind, d.Event, d.SessionKey, int64(d.Seq), d.Body, d.Host, status,
		max(d.MaxAttempts, 1), next, now, now}
}

// ScanHook reads a delivery's HookColumns; the driver's error (no rows)
// is returned as it is.
func ScanHook(sc Scanner) (store.HookDelivery, error) {
	var (
		d                                 store.HookDelivery
		seq, attempts, maxAttempts        int64
		next, leaseUntil, created, update int64
		delivered                         sql.NullInt64
	)
	err := sc.Scan(&d.ID, &d.HookID, &d.Kind, &d.Event, &d.SessionKey, &seq, &d.Body, &d.Host, &d.Status,
		&attempts, &maxAttempts, &next, &d.LeaseOwner, &leaseUntil, &d.LastError, &created, &update, &delivered)
	if err != nil {
		return store.HookDelivery{}, err
	}
	d.Seq, d.Attempts, d.MaxAttempts = uint64(seq), int(attempts), int(maxAttempts)
	d.NextAt, d.CreatedAt, d.UpdatedAt = FromNS(next), FromNS(created), FromNS(update)
	if leaseUntil > 0 {
		d.LeaseUntil = FromNS(leaseUntil)
	}
	if delivered.Valid {
		t := FromNS(delivered.Int64)
		d.DeliveredAt = &t
	}
	return d, nil
}

// Outbox is the hook deliveries o names for evs, each with its event's
// session key and number.
func Outbox(o store.Outbox, evs []event.Event) []store.HookDelivery {
	if o == nil {
		return nil
	}
	var out []store.HookDelivery
	for _, ev := range evs {
		for _, d := range o(ev) {
			d.SessionKey, d.Seq = ev.Session, ev.Seq
			out = append(out, d)
		}
	}
	return out
}

// CountByStatus reads rows of (status, count) into a map.
func CountByStatus(rows Rows) (map[string]int, error) {
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = int(n)
	}
	return out, rows.Err()
}

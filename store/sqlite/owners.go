package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"fmt"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// RegisterInstance stores in, replacing an instance with the same ID.
func (s *Store) RegisterInstance(ctx context.Context, in store.Instance) error {
	if err := record.CheckKey("instance ID", in.ID); err != nil {
		return fmt.Errorf("register instance: %w", err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO instances (id, host, pid, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?)`, in.ID, in.Host, in.PID, record.ToNS(s.rec.OrNow(in.StartedAt)), record.ToNS(s.rec.OrNow(in.HeartbeatAt)))
		return err
	})
	if err != nil {
		return fmt.Errorf("register instance %s: %w", in.ID, err)
	}
	return nil
}

// Heartbeat moves the instance's heartbeat to at, or returns an error
// wrapping store.ErrNotFound when it is no longer registered.
func (s *Store) Heartbeat(ctx context.Context, id string, at time.Time) error {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE instances SET heartbeat_at = max(heartbeat_at, ?) WHERE id = ?`, record.ToNS(s.rec.OrNow(at)), id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("heartbeat of instance %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("heartbeat of instance %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// RemoveInstance forgets the instance; removing an unknown one is not an
// error.
func (s *Store) RemoveInstance(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM instances WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove instance %s: %w", id, err)
	}
	return nil
}

// Instances returns every registered instance, oldest first.
func (s *Store) Instances(ctx context.Context) ([]store.Instance, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, host, pid, started_at, heartbeat_at FROM instances ORDER BY started_at`)
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	defer rows.Close()
	out, err := record.Collect(rows, record.ScanInstance)
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	return out, nil
}

// InterruptOwner ends the owner's active (queued, pending, running) runs as interrupted
// at at (now when zero), removes the instance, and returns the runs it
// ended. Only runs still active are touched, so a run that ended on its
// own meanwhile keeps its end.
func (s *Store) InterruptOwner(ctx context.Context, owner string, at time.Time) ([]store.Run, error) {
	at = s.rec.OrNow(at)
	var runs []store.Run
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE runs SET status = ?, ended_at = ?,
			error = CASE WHEN error = '' THEN ? ELSE error END
			WHERE owner = ? AND status IN `+record.ActiveStatuses+` RETURNING `+record.RunColumns,
			lifecycle.Interrupted, record.ToNS(at), record.InterruptedError, owner)
		if err != nil {
			return err
		}
		if runs, err = scanRuns(rows); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM instances WHERE id = ?`, owner)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("interrupt runs of instance %q: %w", owner, err)
	}
	return runs, nil
}

// RecoverOwner ends the owner's active runs as interrupted at at (now
// when zero), except those t.Resume picks that were resumed fewer than
// t.MaxAttempts times: those keep their status and move to t.Owner with
// attempts one higher. A picked run resumed t.MaxAttempts times already
// ends interrupted with store.QuarantinedError. It removes the instance
// in the same transaction and returns the runs it took over and those it
// ended, as they are now.
func (s *Store) RecoverOwner(ctx context.Context, owner string, at time.Time, t store.Takeover) (resumed, ended []store.Run, err error) {
	if t.Resume != nil {
		if err := record.CheckKey("instance ID", t.Owner); err != nil {
			return nil, nil, fmt.Errorf("recover runs of instance %q: %w", owner, err)
		}
	}
	at = s.rec.OrNow(at)
	err = s.write(ctx, func(tx *sql.Tx) error {
		resumed, ended = nil, nil
		var hb int64
		err := tx.QueryRowContext(ctx, `SELECT heartbeat_at FROM instances WHERE id = ?`, owner).Scan(&hb)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the lease: %w", err)
		}
		if !t.LeaseUnchanged(store.Instance{HeartbeatAt: record.FromNS(hb)}, err == nil) {
			return nil // the owner renewed its lease meanwhile: it is alive
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+record.RunColumns+` FROM runs
			WHERE owner = ? AND status IN `+record.ActiveStatuses+` ORDER BY created_at, rowid`, owner)
		if err != nil {
			return err
		}
		active, err := scanRuns(rows)
		if err != nil {
			return err
		}
		for _, r := range active {
			resume, pick, reason := record.Takeover(r, t)
			if resume {
				r, err = record.ScanRun(tx.QueryRowContext(ctx, `UPDATE runs SET owner = ?, attempts = attempts + 1
					WHERE id = ? RETURNING `+record.RunColumns, t.Owner, r.ID))
				if err != nil {
					return fmt.Errorf("take over run %s: %w", r.ShortID, err)
				}
				resumed = append(resumed, r)
				continue
			}
			r, err = record.ScanRun(tx.QueryRowContext(ctx, `UPDATE runs SET status = ?, ended_at = ?,
				error = CASE WHEN error = '' OR ? THEN ? ELSE error END
				WHERE id = ? RETURNING `+record.RunColumns, lifecycle.Interrupted, record.ToNS(at), pick, reason, r.ID))
			if err != nil {
				return fmt.Errorf("interrupt run %s: %w", r.ShortID, err)
			}
			ended = append(ended, r)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM instances WHERE id = ?`, owner)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("recover runs of instance %q: %w", owner, err)
	}
	return resumed, ended, nil
}

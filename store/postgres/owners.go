package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// RegisterInstance stores in, replacing an instance with the same ID.
func (s *Store) RegisterInstance(ctx context.Context, in store.Instance) error {
	if err := record.CheckKey("instance ID", in.ID); err != nil {
		return fmt.Errorf("register instance: %w", err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO instances (id, host, pid, started_at, heartbeat_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid,
			started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at`,
		in.ID, in.Host, in.PID, record.ToNS(s.rec.OrNow(in.StartedAt)), record.ToNS(s.rec.OrNow(in.HeartbeatAt)))
	if err != nil {
		return fmt.Errorf("register instance %s: %w", in.ID, err)
	}
	return nil
}

// Heartbeat moves the instance's heartbeat to at, or returns an error
// wrapping store.ErrNotFound when it is no longer registered.
func (s *Store) Heartbeat(ctx context.Context, id string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE instances SET heartbeat_at = GREATEST(heartbeat_at, $1) WHERE id = $2`,
		record.ToNS(s.rec.OrNow(at)), id)
	if err != nil {
		return fmt.Errorf("heartbeat of instance %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("heartbeat of instance %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// RemoveInstance forgets the instance; removing an unknown one is not an
// error.
func (s *Store) RemoveInstance(ctx context.Context, id string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM instances WHERE id = $1`, id); err != nil {
			return err
		}
		return notifyTx(ctx, tx, ChannelInstances, id)
	})
	if err != nil {
		return fmt.Errorf("remove instance %s: %w", id, err)
	}
	return nil
}

// Instances returns every registered instance, oldest first.
func (s *Store) Instances(ctx context.Context) ([]store.Instance, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, host, pid, started_at, heartbeat_at FROM instances ORDER BY started_at, id`)
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

// RecoverOwner ends a gone owner's active runs as InterruptOwner does,
// except those t.Resume picks that were resumed fewer than t.MaxAttempts
// times: they move to t.Owner with attempts one higher (see
// store.OwnerStore). One transaction, with the runs locked.
func (s *Store) RecoverOwner(ctx context.Context, owner string, at time.Time, t store.Takeover) (resumed, ended []store.Run, err error) {
	if t.Resume != nil {
		if err := record.CheckKey("instance ID", t.Owner); err != nil {
			return nil, nil, fmt.Errorf("recover runs of instance %q: %w", owner, err)
		}
	}
	at = s.rec.OrNow(at)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		resumed, ended = nil, nil
		var hb int64
		err := tx.QueryRow(ctx, `SELECT heartbeat_at FROM instances WHERE id = $1 FOR UPDATE`, owner).Scan(&hb)
		if err != nil && !noRows(err) {
			return fmt.Errorf("read the lease: %w", err)
		}
		if !t.LeaseUnchanged(store.Instance{HeartbeatAt: record.FromNS(hb)}, err == nil) {
			return nil // the owner renewed its lease meanwhile: it is alive
		}
		rows, err := tx.Query(ctx, `SELECT `+record.RunColumns+` FROM runs
			WHERE owner = $1 AND status IN `+record.ActiveStatuses+` ORDER BY created_at, position FOR UPDATE`, owner)
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
				r, err = record.ScanRun(tx.QueryRow(ctx, `UPDATE runs SET owner = $1, attempts = attempts + 1
					WHERE id = $2 RETURNING `+record.RunColumns, t.Owner, r.ID))
				if err != nil {
					return fmt.Errorf("take over run %s: %w", r.ShortID, err)
				}
				resumed = append(resumed, r)
				continue
			}
			r, err = record.ScanRun(tx.QueryRow(ctx, `UPDATE runs SET status = $1, ended_at = $2,
				error = CASE WHEN error = '' OR $3 THEN $4 ELSE error END
				WHERE id = $5 RETURNING `+record.RunColumns, string(lifecycle.Interrupted), record.ToNS(at), pick, reason, r.ID))
			if err != nil {
				return fmt.Errorf("interrupt run %s: %w", r.ShortID, err)
			}
			ended = append(ended, r)
		}
		if err := notifyEnded(ctx, tx, ended...); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM instances WHERE id = $1`, owner)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("recover runs of instance %q: %w", owner, err)
	}
	return resumed, ended, nil
}

// InterruptOwner ends the owner's active (queued, pending, running) runs
// as interrupted at at (now when zero), removes the instance, and returns
// the runs it ended, in one transaction. Only runs still active are
// touched, so a run that ended on its own meanwhile keeps its end; of two
// processes interrupting the same owner, the second finds nothing left.
func (s *Store) InterruptOwner(ctx context.Context, owner string, at time.Time) ([]store.Run, error) {
	at = s.rec.OrNow(at)
	var runs []store.Run
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE runs SET status = $1, ended_at = $2,
			error = CASE WHEN error = '' THEN $3 ELSE error END
			WHERE owner = $4 AND status IN `+record.ActiveStatuses+` RETURNING `+record.RunColumns,
			string(lifecycle.Interrupted), record.ToNS(at), record.InterruptedError, owner)
		if err != nil {
			return err
		}
		if runs, err = scanRuns(rows); err != nil {
			return err
		}
		if err := notifyEnded(ctx, tx, runs...); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM instances WHERE id = $1`, owner)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("interrupt runs of instance %q: %w", owner, err)
	}
	return runs, nil
}

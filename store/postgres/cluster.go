package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// ErrClusterFull means a claim found as many runs active in the whole
// cluster as its limit allows: the run waits in the job queue.
var ErrClusterFull = errors.New("the cluster's limit on running subagents is reached")

// claimLock is the transaction advisory lock key that serialises claims,
// so that the cluster-wide count and the claim are one decision.
const claimLock = 0x61766163 // "avac"

// EnqueueRun stores a new run (queued, owned by store.OwnerQueue) with
// msgs in its own session (the context it starts from), and calls enqueue
// with the same transaction (the job queue's transactional insert): the
// run is recorded and scheduled together, or neither.
func (s *Store) EnqueueRun(ctx context.Context, r store.Run, msgs []store.Message, enqueue func(ctx context.Context, tx pgx.Tx) error) error {
	msgs = slices.Clone(msgs)
	for i := range msgs {
		if err := s.rec.CheckMessage(&msgs[i]); err != nil {
			return fmt.Errorf("enqueue run %s: message %d: %w", r.ShortID, i+1, err)
		}
	}
	err := s.createRun(ctx, r, func(tx pgx.Tx) error {
		for _, m := range msgs {
			if _, err := s.insertMessage(ctx, tx, m); err != nil {
				return err
			}
		}
		return enqueue(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	return nil
}

// ClaimRun makes owner the owner of a run the job queue holds (owner
// store.OwnerQueue, still active) and returns it as it is now. With
// maxActive > 0 it first counts the runs owned by processes (not the
// queue) that are active in the whole database, and refuses with
// ErrClusterFull when there are maxActive of them; claims are serialised
// by an advisory lock so that the count holds. A run that is no longer
// the queue's (claimed, taken over, ended) gives an error wrapping
// store.ErrInvalidTransition.
func (s *Store) ClaimRun(ctx context.Context, id, owner string, maxActive int) (store.Run, error) {
	ref := record.NormalizeRunRef(id)
	if err := errors.Join(record.CheckKey("run ID", ref), record.CheckKey("instance ID", owner)); err != nil {
		return store.Run{}, fmt.Errorf("claim run: %w", err)
	}
	var run store.Run
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if maxActive > 0 {
			if err := checkClusterRoom(ctx, tx, maxActive); err != nil {
				return err
			}
		}
		r, err := record.ScanRun(tx.QueryRow(ctx, `UPDATE runs SET owner = $1
			WHERE (id = $2 OR short_id = $2) AND owner = $3 AND status IN `+record.ActiveStatuses+`
			RETURNING `+record.RunColumns, owner, ref, store.OwnerQueue))
		if noRows(err) {
			return fmt.Errorf("run %s is not waiting in the job queue: %w", ref, store.ErrInvalidTransition)
		}
		run = r
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("claim run %s: %w", ref, err)
	}
	return run, nil
}

// UnclaimRun gives a run owner claimed but did not start back to the job
// queue (owner store.OwnerQueue again); a run owner no longer holds
// queued is left alone.
func (s *Store) UnclaimRun(ctx context.Context, id, owner string) error {
	ref := record.NormalizeRunRef(id)
	_, err := s.pool.Exec(ctx, `UPDATE runs SET owner = $1 WHERE (id = $2 OR short_id = $2) AND owner = $3 AND status = $4`,
		store.OwnerQueue, ref, owner, string(lifecycle.Queued))
	if err != nil {
		return fmt.Errorf("unclaim run %s: %w", ref, err)
	}
	return nil
}

// checkClusterRoom takes the claim lock and refuses with ErrClusterFull
// when maxActive runs are active under a process's ownership.
func checkClusterRoom(ctx context.Context, tx pgx.Tx, maxActive int) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLock); err != nil {
		return fmt.Errorf("claim lock: %w", err)
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM runs WHERE owner <> $1 AND status IN `+record.ActiveStatuses,
		store.OwnerQueue).Scan(&n); err != nil {
		return fmt.Errorf("count active runs: %w", err)
	}
	if n >= maxActive {
		return fmt.Errorf("%w (%d of %d active)", ErrClusterFull, n, maxActive)
	}
	return nil
}

// notifyEnded queues a ChannelRuns notification for each run in tx that
// is now final.
func notifyEnded(ctx context.Context, tx pgx.Tx, runs ...store.Run) error {
	for _, r := range runs {
		if r.Status.Final() {
			if err := notifyTx(ctx, tx, ChannelRuns, r.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// notifyFinal queues a ChannelRuns notification for the run id when to
// is final.
func notifyFinal(ctx context.Context, tx pgx.Tx, id string, to lifecycle.Status) error {
	if !to.Final() {
		return nil
	}
	return notifyTx(ctx, tx, ChannelRuns, id)
}

// RequeueRun gives a finished run a follow-up in the job queue: in one
// transaction, if the run is still from (a final status), it moves back
// to queued, owned by store.OwnerQueue, with msgs (the follow-up) added
// to its conversation, and enqueue runs with the same transaction (the
// job's insert). A run no longer from gives an error wrapping
// store.ErrInvalidTransition and changes nothing.
func (s *Store) RequeueRun(ctx context.Context, id string, from lifecycle.Status, msgs []store.Message, enqueue func(ctx context.Context, tx pgx.Tx) error) error {
	ref := record.NormalizeRunRef(id)
	if err := record.CheckTransition(ref, []lifecycle.Status{from}, lifecycle.Queued, nil); err != nil {
		return fmt.Errorf("requeue run %s: %w", ref, err)
	}
	msgs = slices.Clone(msgs)
	for i := range msgs {
		if err := s.rec.CheckMessage(&msgs[i]); err != nil {
			return fmt.Errorf("requeue run %s: message %d: %w", ref, i+1, err)
		}
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET status = $1, owner = $2, ended_at = NULL, announced = FALSE
			WHERE (id = $3 OR short_id = $3) AND status = $4`, string(lifecycle.Queued), store.OwnerQueue, ref, string(from))
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("run %s is not %s: %w", ref, from, store.ErrInvalidTransition)
		}
		for _, m := range msgs {
			if _, err := s.insertMessage(ctx, tx, m); err != nil {
				return err
			}
		}
		return enqueue(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("requeue run %s: %w", ref, err)
	}
	return nil
}

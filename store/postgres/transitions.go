package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// TransitionRun moves the run (full or short ID) to status to, if and only
// if its status is one of from. In one transaction it locks the run's row
// (SELECT … FOR UPDATE), checks the status it finds against from and
// lifecycle.CanMove, and updates it. When cancel races completion in any
// two processes, the second waits for the first's lock, finds the status
// the first set, and gets an error wrapping store.ErrInvalidTransition
// naming it.
//
// The write is fenced by owner (see store.RunStore): the run's row is
// locked, and an active run moves only if owner owns it; otherwise the
// error wraps store.ErrStaleOwner.
//
// Moving to running sets StartedAt the first time, clears EndedAt and
// clears Announced, so a resumed run's next result is announced in turn.
// Moving to a final status sets EndedAt (fin.EndedAt, or now) and records
// fin when given; fin is refused for an active status.
func (s *Store) TransitionRun(ctx context.Context, id, owner string, from []lifecycle.Status, to lifecycle.Status, fin *store.RunFinish) error {
	ref := record.NormalizeRunRef(id)
	if err := record.CheckTransition(ref, from, to, fin); err != nil {
		return fmt.Errorf("transition run %s: %w", id, err)
	}
	fin = s.rec.Mask.Finish(fin)
	if fin != nil {
		for i := range fin.Messages {
			if err := s.rec.CheckMessage(&fin.Messages[i]); err != nil {
				return fmt.Errorf("transition run %s: message %d: %w", id, i+1, err)
			}
		}
	}
	end, err := s.endEvents(fin)
	if err != nil {
		return fmt.Errorf("transition run %s: %w", id, err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var runID, short, key, status, runOwner string
		err := tx.QueryRow(ctx, `SELECT id, short_id, session_key, status, owner FROM runs
			WHERE id = $1 OR short_id = $1 FOR UPDATE`, ref).Scan(&runID, &short, &key, &status, &runOwner)
		if noRows(err) {
			return fmt.Errorf("run %s: %w", ref, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("lock run: %w", err)
		}
		cur := lifecycle.Status(status)
		if !slices.Contains(from, cur) || !lifecycle.CanMove(cur, to) || !record.Fenced(cur, runOwner, owner) {
			return record.Refused(record.RunState{Short: short, Status: status, Owner: runOwner}, owner, from)
		}
		var p params
		set, err := s.transitionSet(&p, to, owner, fin)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET `+strings.Join(set, ", ")+` WHERE id = `+p.add(runID), p...); err != nil {
			return fmt.Errorf("update run: %w", err)
		}
		if err := notifyFinal(ctx, tx, runID, to); err != nil {
			return err
		}
		if fin == nil {
			return nil
		}
		if err := s.finishConversation(ctx, tx, key, fin); err != nil {
			return err
		}
		if fin.SpendSession != "" && (fin.Spend.CostCents > 0 || fin.Spend.Tokens > 0) {
			if err := addSpend(ctx, tx, fin.SpendSession, "subagents", fin.Spend, record.ToNS(s.now())); err != nil {
				return err
			}
		}
		return end.insert(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("transition run %s to %s: %w", ref, to, err)
	}
	return nil
}

// endWrite is the last events a run's end stores (RunFinish.Events),
// encoded, with their hook deliveries.
type endWrite struct {
	s      *Store
	evs    []event.Event
	chunks []eventChunk
	hooks  []store.HookDelivery
}

// endEvents encodes fin's events for TransitionRun's transaction.
func (s *Store) endEvents(fin *store.RunFinish) (endWrite, error) {
	w := endWrite{s: s}
	if fin == nil || len(fin.Events) == 0 {
		return w, nil
	}
	chunks, err := eventChunks(fin.Events)
	if err != nil {
		return w, err
	}
	w.evs, w.chunks, w.hooks = fin.Events, chunks, outboxOf(s.outbox, fin.Events)
	return w, nil
}

// insert stores the end's events in tx, with their hook deliveries and
// notification, in one round trip; a number taken wraps
// event.ErrSeqTaken.
func (w endWrite) insert(ctx context.Context, tx pgx.Tx) error {
	if len(w.evs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	w.s.queueEvents(b, w.evs, w.chunks, w.hooks)
	return appendError(w.evs, tx.SendBatch(ctx, b).Close())
}

// finishConversation records a finish's messages in the run's own
// session (key): one session update, then the message rows.
func (s *Store) finishConversation(ctx context.Context, tx pgx.Tx, key string, fin *store.RunFinish) error {
	if len(fin.Messages) == 0 {
		return nil
	}
	return record.WriteFinish(key, s.now, fin.Messages,
		func(key string, at time.Time) error { return touchSession(ctx, tx, key, at) },
		func(m store.Message) error {
			_, err := insertMessageRow(ctx, tx, m)
			return err
		})
}

// transitionSet builds the SET clause of TransitionRun's UPDATE, adding
// its arguments to p.
func (s *Store) transitionSet(p *params, to lifecycle.Status, owner string, fin *store.RunFinish) ([]string, error) {
	set := []string{"status = " + p.add(string(to))}
	now := s.now()
	if !to.Final() {
		set = append(set, "owner = "+p.add(owner))
	}
	if to == lifecycle.Running {
		at := p.add(record.ToNS(now))
		// A move to running from a final status starts a follow-up (SET
		// reads the row as it was).
		set = append(set, "started_at = coalesce(started_at, "+at+")", "turn_started_at = "+at, "ended_at = NULL", "announced = FALSE",
			"follow_up = (status NOT IN "+record.ActiveStatuses+")")
	}
	if !to.Final() {
		return set, nil
	}
	ended := now
	if fin != nil && !fin.EndedAt.IsZero() {
		ended = fin.EndedAt
	}
	set = append(set, "ended_at = "+p.add(record.ToNS(ended)))
	if fin == nil {
		return set, nil
	}
	result, err := record.JSONArg("run result", fin.Result)
	if err != nil {
		return nil, err
	}
	set = append(set, "result = "+p.add(result), "error = "+p.add(fin.Error), "tokens = "+p.add(fin.Tokens),
		"cost_cents = "+p.add(fin.CostCents), "iterations = "+p.add(fin.Iterations), "active_ms = "+p.add(fin.Active.Milliseconds()))
	if fin.Delivered {
		set = append(set, "announced = TRUE")
	}
	return set, nil
}

// AnnounceResult delivers a finished run's result into its parent session:
// in one transaction, holding the run's row lock, if the run is not yet
// announced, it inserts msg and sets announced. It returns false, storing
// nothing, if the run was already announced, so concurrent or repeated
// calls (from any process, or a retry after a restart) deliver the
// message exactly once.
//
// msg.SessionKey defaults to the run's parent session, and must be it when
// given; msg.RunID defaults to the run's ID; msg.Role to subagent. A run
// still active gives store.ErrInvalidTransition.
func (s *Store) AnnounceResult(ctx context.Context, runID, owner string, msg store.Message) (bool, error) {
	ref := record.NormalizeRunRef(runID)
	if err := record.CheckKey("run ID", ref); err != nil {
		return false, fmt.Errorf("announce result: %w", err)
	}
	var announced bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		announced, err = s.announce(ctx, tx, ref, owner, msg)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("announce result of run %s: %w", runID, err)
	}
	return announced, nil
}

func (s *Store) announce(ctx context.Context, tx pgx.Tx, ref, owner string, msg store.Message) (bool, error) {
	var (
		id, short, parent, status, runOwner string
		done, followUp                      bool
	)
	err := tx.QueryRow(ctx, `SELECT id, short_id, parent_session, status, announced, owner, follow_up FROM runs
		WHERE id = $1 OR short_id = $1 FOR UPDATE`, ref).Scan(&id, &short, &parent, &status, &done, &runOwner, &followUp)
	if noRows(err) {
		return false, store.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("read run: %w", err)
	}
	if done {
		return false, nil
	}
	if owner != "" && runOwner != owner {
		return false, fmt.Errorf("run %s is owned by %s now, not %s: its result is not announced with this message: %w",
			short, runOwner, owner, store.ErrStaleOwner)
	}
	if !lifecycle.Status(status).Final() {
		return false, fmt.Errorf("run %s is %s; only a finished run's result is announced: %w",
			short, status, store.ErrInvalidTransition)
	}
	if err := s.rec.FillAnnouncement(&msg, id, parent); err != nil {
		return false, err
	}
	mid, err := s.insertMessage(ctx, tx, msg)
	if err != nil {
		return false, err
	}
	// The result of the turn a spawn started makes its session owed a
	// report; a follow-up's does not: the person sent it and read the
	// answer in the subagent's own chat (store.ReportStore).
	if !followUp {
		if _, err := tx.Exec(ctx, `UPDATE sessions SET last_result_id = $1 WHERE key = $2`, mid, msg.SessionKey); err != nil {
			return false, fmt.Errorf("record the session's last result: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET announced = TRUE WHERE id = $1`, id); err != nil {
		return false, fmt.Errorf("mark announced: %w", err)
	}
	return true, nil
}

// Unannounced returns finished runs with a parent session whose result was
// not yet announced, oldest end first: what a restarted daemon still owes
// the orchestrators.
func (s *Store) Unannounced(ctx context.Context) ([]store.Run, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+record.RunColumns+` FROM runs
		WHERE NOT announced AND parent_session <> '' AND status NOT IN `+record.ActiveStatuses+`
		ORDER BY ended_at NULLS FIRST, created_at, position`)
	if err != nil {
		return nil, fmt.Errorf("list unannounced runs: %w", err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("list unannounced runs: %w", err)
	}
	return runs, nil
}

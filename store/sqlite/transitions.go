package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// TransitionRun moves the run (full or short ID) to status to, if and only
// if its status is one of from, in one conditional UPDATE. When cancel
// races completion, SQLite applies the two UPDATEs one after the other;
// the first finds "running" and wins, the second matches no row and gets
// an error wrapping store.ErrInvalidTransition naming the status the first
// set.
//
// The write is fenced by owner (see store.RunStore): an active run moves
// only if owner owns it, in the same UPDATE; otherwise the error wraps
// store.ErrStaleOwner.
//
// Moving to running sets StartedAt the first time and TurnStartedAt
// every time, clears EndedAt and
// clears Announced, so a resumed run's next result is announced in turn.
// Moving to a final status sets EndedAt (fin.EndedAt, or now) and records
// fin when given; fin is refused for an active status.
func (s *Store) TransitionRun(ctx context.Context, id, owner string, from []lifecycle.Status, to lifecycle.Status, fin *store.RunFinish) error {
	ref := record.NormalizeRunRef(id)
	if err := record.CheckTransition(ref, from, to, fin); err != nil {
		return fmt.Errorf("transition run %s: %w", id, err)
	}
	fin = s.rec.Mask.Finish(fin)
	set, args, err := s.transitionSet(to, owner, fin)
	if err != nil {
		return fmt.Errorf("transition run %s: %w", id, err)
	}
	if fin != nil {
		for i := range fin.Messages {
			if err := s.rec.CheckMessage(&fin.Messages[i]); err != nil {
				return fmt.Errorf("transition run %s: message %d: %w", id, i+1, err)
			}
		}
	}
	// A run's ID is a UUID and its short ID S-xxxxxx (record.CheckRun):
	// the form of ref says which column to look in, one index instead
	// of a MULTI-INDEX OR over both.
	column := "id"
	if store.ValidShortID(ref) {
		column = "short_id"
	}
	args = append(args, ref)
	args = append(args, stringArgs(from)...)
	args = append(args, owner)
	end, err := s.endEvents(fin)
	if err != nil {
		return fmt.Errorf("transition run %s: %w", id, err)
	}
	var moved bool
	err = s.write(ctx, func(tx *sql.Tx) error {
		// Nothing is read back (no RETURNING): a row set read inside a
		// transaction costs database/sql a goroutine and the run's end
		// ~50 µs; the conversation names the run's session from its row.
		res, err := tx.ExecContext(ctx, `UPDATE runs SET `+strings.Join(set, ", ")+`
			WHERE `+column+` = ? AND status IN (`+placeholders(len(from))+`) AND `+record.FenceSQL("?"), args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 { // no row: the run did not move
			return err
		}
		moved = true
		if fin == nil {
			return nil
		}
		if err := s.finishConversation(ctx, tx, column, ref, fin); err != nil {
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
	if moved {
		return nil
	}
	st, err := s.runState(ctx, ref)
	if err != nil {
		return fmt.Errorf("transition run to %s: %w", to, err)
	}
	return fmt.Errorf("transition run %s to %s: %w", st.Short, to, record.Refused(st, owner, from))
}

// endWrite is the last events a run's end stores (RunFinish.Events),
// encoded, with their hook deliveries.
type endWrite struct {
	s     *Store
	evs   []event.Event
	lines []string
	hooks []store.HookDelivery
}

// endEvents encodes fin's events for TransitionRun's transaction.
func (s *Store) endEvents(fin *store.RunFinish) (endWrite, error) {
	w := endWrite{s: s}
	if fin == nil || len(fin.Events) == 0 {
		return w, nil
	}
	w.evs, w.lines = fin.Events, make([]string, len(fin.Events))
	for i, ev := range fin.Events {
		line, err := record.EventLine(ev)
		if err != nil {
			return w, err
		}
		w.lines[i] = line
	}
	w.hooks = outboxOf(s.outbox, w.evs)
	return w, nil
}

// insert stores the end's events in tx; a number taken wraps
// event.ErrSeqTaken.
func (w endWrite) insert(ctx context.Context, tx *sql.Tx) error {
	if len(w.evs) == 0 {
		return nil
	}
	if err := insertEvents(ctx, tx, w.evs, w.lines, event.Fence{}); err != nil {
		return appendError(w.evs, err)
	}
	return w.s.insertHookDeliveries(ctx, tx, w.hooks)
}

// finishConversation records a finish's messages in the own session of
// the run whose column is ref: one session update, then the message
// rows (record.WriteFinish, with the run's session found from its row).
func (s *Store) finishConversation(ctx context.Context, tx *sql.Tx, column, ref string, fin *store.RunFinish) error {
	if len(fin.Messages) == 0 {
		return nil
	}
	return record.WriteFinish("", s.now, fin.Messages,
		func(key string, at time.Time) error {
			if key == "" {
				return touchRunSession(ctx, tx, column, ref, at)
			}
			return touchSession(ctx, tx, key, at)
		},
		func(m store.Message) error {
			_, err := insertMessageRow(ctx, tx, m)
			return err
		})
}

// touchRunSession is touchSession for the own session of the run whose
// column (id or short_id) is ref, named from the run's row.
func touchRunSession(ctx context.Context, tx *sql.Tx, column, ref string, at time.Time) error {
	ns := record.ToNS(at)
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO sessions (key, created_at, updated_at) SELECT session_key, ?, ? FROM runs WHERE `+column+` = ?
		ON CONFLICT (key) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)`,
		ns, ns, ref); err != nil {
		return fmt.Errorf("touch run session: %w", err)
	}
	return nil
}

// transitionSet builds the SET clause of TransitionRun's UPDATE.
// Moving to an active status records owner as the run's owner.
func (s *Store) transitionSet(to lifecycle.Status, owner string, fin *store.RunFinish) ([]string, []any, error) {
	set, args := []string{"status = ?"}, []any{to}
	now := s.now()
	if !to.Final() {
		set, args = append(set, "owner = ?"), append(args, owner)
	}
	if to == lifecycle.Running {
		// A move to running from a final status starts a follow-up (SET
		// reads the row as it was).
		set = append(set, "started_at = coalesce(started_at, ?)", "turn_started_at = ?", "ended_at = NULL", "announced = 0",
			"follow_up = (status NOT IN "+record.ActiveStatuses+")")
		args = append(args, record.ToNS(now), record.ToNS(now))
	}
	if !to.Final() {
		return set, args, nil
	}
	ended := now
	if fin != nil && !fin.EndedAt.IsZero() {
		ended = fin.EndedAt
	}
	set, args = append(set, "ended_at = ?"), append(args, record.ToNS(ended))
	if fin == nil {
		return set, args, nil
	}
	result, err := record.JSONArg("run result", fin.Result)
	if err != nil {
		return nil, nil, err
	}
	set = append(set, "result = ?", "error = ?", "tokens = ?", "cost_cents = ?", "iterations = ?", "active_ms = ?")
	args = append(args, result, fin.Error, fin.Tokens, fin.CostCents, fin.Iterations, fin.Active.Milliseconds())
	if fin.Delivered {
		set = append(set, "announced = 1")
	}
	return set, args, nil
}

// AnnounceResult delivers a finished run's result into its parent session:
// in one transaction, if the run is not yet announced, it inserts msg and
// sets announced. It returns false, storing nothing, if the run was
// already announced, so concurrent or repeated calls (a retry after a
// restart) deliver the message exactly once.
//
// msg.SessionKey defaults to the run's parent session, and must be it when
// given; msg.RunID defaults to the run's ID; msg.Role to subagent. A run
// still pending or running gives store.ErrInvalidTransition.
func (s *Store) AnnounceResult(ctx context.Context, runID, owner string, msg store.Message) (bool, error) {
	ref := record.NormalizeRunRef(runID)
	if err := record.CheckKey("run ID", ref); err != nil {
		return false, fmt.Errorf("announce result: %w", err)
	}
	var announced bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		announced, err = s.announce(ctx, tx, ref, owner, msg)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("announce result of run %s: %w", runID, err)
	}
	return announced, nil
}

func (s *Store) announce(ctx context.Context, tx *sql.Tx, ref, owner string, msg store.Message) (bool, error) {
	var (
		id, short, parent, status, runOwner string
		done, followUp                      bool
	)
	err := tx.QueryRowContext(ctx, `SELECT id, short_id, parent_session, status, announced, owner, follow_up FROM runs
		WHERE id = ? OR short_id = ?`, ref, ref).Scan(&id, &short, &parent, &status, &done, &runOwner, &followUp)
	if errors.Is(err, sql.ErrNoRows) {
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
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET last_result_id = ? WHERE key = ?`, mid, msg.SessionKey); err != nil {
			return false, fmt.Errorf("record the session's last result: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET announced = 1 WHERE id = ?`, id); err != nil {
		return false, fmt.Errorf("mark announced: %w", err)
	}
	return true, nil
}

// unannouncedSQL reads the runs Unannounced returns through the partial
// index runs_unannounced (migration 00013), not the whole table.
var unannouncedSQL = `SELECT ` + record.RunColumns + ` FROM runs
	WHERE announced = 0 AND parent_session != '' AND status NOT IN ` + record.ActiveStatuses + `
	ORDER BY ended_at, created_at, rowid`

// Unannounced returns finished runs with a parent session whose result was
// not yet announced, oldest end first: what a restarted daemon still owes
// the orchestrators.
func (s *Store) Unannounced(ctx context.Context) ([]store.Run, error) {
	rows, err := s.reader.QueryContext(ctx, unannouncedSQL)
	if err != nil {
		return nil, fmt.Errorf("list unannounced runs: %w", err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("list unannounced runs: %w", err)
	}
	return runs, nil
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

func scanRuns(rows *sql.Rows) ([]store.Run, error) {
	defer rows.Close()
	return record.Collect(rows, record.ScanRun)
}

// The statements of CreateRun, prepared at Open: a spawn writes its run
// record before its first model call.
const (
	insertRunSessionSQL = `INSERT INTO sessions (key, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`
	insertRunSQL        = `INSERT INTO runs (` + record.RunColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// CreateRun stores a new run and creates its session. A short ID or ID
// already in use gives an error wrapping store.ErrDuplicate.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if err := s.rec.CheckRun(&r); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	if r.Attempts < 0 { // checked here only: store/postgres does not refuse it
		return fmt.Errorf("create run: run attempts %d is negative", r.Attempts)
	}
	s.rec.Mask.Run(&r)
	config, err := record.JSONArg("run config", r.Config)
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ShortID, err)
	}
	result, err := record.JSONArg("run result", r.Result)
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ShortID, err)
	}
	created := record.ToNS(r.CreatedAt)
	var idem store.Idempotency
	if r.Idempotency != nil {
		idem = *r.Idempotency
		if err := s.rec.CheckIdempotency(&idem, r.ShortID); err != nil {
			return fmt.Errorf("create run %s: %w", r.ShortID, err)
		}
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if r.Idempotency != nil {
			if err := s.recordIdempotency(ctx, tx, idem); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, insertRunSessionSQL, r.SessionKey, created, created); err != nil {
			return fmt.Errorf("create run session: %w", err)
		}
		_, err := tx.ExecContext(ctx, insertRunSQL,
			r.ID, r.ShortID, r.SessionKey, r.ParentSession, r.ParentAgent, r.GroupID, r.Mode,
			r.Role, r.Task, r.Model, config, r.Status, result, r.Error, r.Tokens, r.CostCents,
			r.Iterations, created, record.NullNS(r.StartedAt), record.NullNS(r.EndedAt), r.Announced, r.Owner, r.Attempts,
			r.Active.Milliseconds(), record.NullNS(r.TurnStartedAt))
		return err
	})
	switch {
	case errors.Is(err, store.ErrKeyUsed):
		return fmt.Errorf("create run %s: %w", r.ShortID, err)
	case isUniqueViolation(err) && strings.Contains(err.Error(), "runs.short_id"):
		return fmt.Errorf("create run: short ID %s is already used: %w", r.ShortID, store.ErrDuplicate)
	case isUniqueViolation(err):
		return fmt.Errorf("create run: ID %s is already used: %w", r.ID, store.ErrDuplicate)
	case err != nil:
		return fmt.Errorf("create run %s: %w", r.ShortID, err)
	}
	return nil
}

// ShortIDExists reports whether a run has the short ID short.
func (s *Store) ShortIDExists(ctx context.Context, short string) (bool, error) {
	if !store.ValidShortID(short) {
		return false, fmt.Errorf("short ID %q is not S- and six lowercase hex characters", short)
	}
	var exists bool
	err := s.reader.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE short_id = ?)`, short).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("look up short ID %s: %w", short, err)
	}
	return exists, nil
}

// GetRun finds a run by full ID, short ID, or a unique prefix of either
// (case-insensitive). It returns an error wrapping store.ErrNotFound, or an
// *store.AmbiguousError listing the candidates.
func (s *Store) GetRun(ctx context.Context, idOrPrefix string) (store.Run, error) {
	ref := record.NormalizeRunRef(idOrPrefix)
	if ref == "" || ref == "S-" {
		return store.Run{}, fmt.Errorf("get run: ID %q is %w; give a run ID, short ID (S-xxxxxx) or a prefix of one", idOrPrefix, store.ErrEmpty)
	}
	r, err := record.ScanRun(s.reader.QueryRowContext(ctx,
		`SELECT `+record.RunColumns+` FROM runs WHERE id = ? OR short_id = ?`, ref, ref))
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("get run %s: %w", ref, err)
	}
	ids, shorts, err := s.runsWithPrefix(ctx, ref)
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %s: %w", ref, err)
	}
	switch len(ids) {
	case 0:
		return store.Run{}, fmt.Errorf("run %s: %w", idOrPrefix, store.ErrNotFound)
	case 1:
		r, err = record.ScanRun(s.reader.QueryRowContext(ctx, `SELECT `+record.RunColumns+` FROM runs WHERE id = ?`, ids[0]))
		if err != nil {
			return store.Run{}, fmt.Errorf("get run %s: %w", ids[0], err)
		}
		return r, nil
	}
	slices.Sort(shorts)
	return store.Run{}, &store.AmbiguousError{Prefix: idOrPrefix, Candidates: shorts}
}

// prefixEnd is above every character an ID holds, so a BINARY range
// [prefix, prefix+prefixEnd) selects exactly the strings starting with
// prefix, using the index.
const prefixEnd = "\U0010FFFF"

// runsWithPrefix returns the IDs and short IDs of the runs whose ID or
// short ID starts with prefix.
func (s *Store) runsWithPrefix(ctx context.Context, prefix string) (ids, shorts []string, err error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, short_id FROM runs
		WHERE (id >= ? AND id < ?) OR (short_id >= ? AND short_id < ?)`,
		prefix, prefix+prefixEnd, prefix, prefix+prefixEnd)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, short string
		if err := rows.Scan(&id, &short); err != nil {
			return nil, nil, err
		}
		ids, shorts = append(ids, id), append(shorts, short)
	}
	return ids, shorts, rows.Err()
}

// ListRuns returns the runs f selects, newest first.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	if err := record.CheckRunFilter(f); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var (
		where []string
		args  []any
	)
	if f.ParentSession != "" {
		where, args = append(where, "parent_session = ?"), append(args, f.ParentSession)
	}
	if len(f.Status) > 0 {
		where = append(where, "status IN ("+placeholders(len(f.Status))+")")
		args = append(args, stringArgs(f.Status)...)
	}
	if f.Role != "" {
		where, args = append(where, "role = ?"), append(args, f.Role)
	}
	if f.Active {
		where = append(where, "status IN ("+placeholders(len(lifecycle.Active))+")")
		args = append(args, stringArgs(lifecycle.Active)...)
	}
	query := `SELECT ` + record.RunColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY created_at DESC, rowid DESC`
	if f.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// runState returns the run's short ID, status and owner, for the error
// of a refused write.
func (s *Store) runState(ctx context.Context, ref string) (record.RunState, error) {
	var st record.RunState
	err := s.reader.QueryRowContext(ctx, `SELECT short_id, status, owner FROM runs WHERE id = ? OR short_id = ?`,
		ref, ref).Scan(&st.Short, &st.Status, &st.Owner)
	if errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("run %s: %w", ref, store.ErrNotFound)
	}
	if err != nil {
		return st, fmt.Errorf("read run %s: %w", ref, err)
	}
	return st, nil
}

// runStatus returns the run's short ID and current status, for error
// messages after a conditional update matched nothing.
func (s *Store) runStatus(ctx context.Context, ref string) (short, status string, err error) {
	err = s.reader.QueryRowContext(ctx, `SELECT short_id, status FROM runs WHERE id = ? OR short_id = ?`,
		ref, ref).Scan(&short, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("run %s: %w", ref, store.ErrNotFound)
	}
	if err != nil {
		return "", "", fmt.Errorf("read run %s: %w", ref, err)
	}
	return short, status, nil
}

// UpdateRunProgress records an active run's counters so far. A run that
// has ended keeps its final counters and the call returns an error
// wrapping store.ErrInvalidTransition.
func (s *Store) UpdateRunProgress(ctx context.Context, id string, tokens int, costCents float64, iterations int) error {
	ref := record.NormalizeRunRef(id)
	if err := errors.Join(record.CheckKey("run ID", ref), record.CheckCounters(tokens, costCents, iterations)); err != nil {
		return fmt.Errorf("update run progress: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, `UPDATE runs SET tokens = ?, cost_cents = ?, iterations = ?
		WHERE (id = ? OR short_id = ?) AND status IN `+record.ActiveStatuses,
		tokens, costCents, iterations, ref, ref)
	if err != nil {
		return fmt.Errorf("update run progress %s: %w", ref, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	short, status, err := s.runStatus(ctx, ref)
	if err != nil {
		return fmt.Errorf("update run progress: %w", err)
	}
	return fmt.Errorf("update run progress: run %s has ended (%s): %w", short, status, store.ErrInvalidTransition)
}

// The statements of CheckpointRun, prepared at Open: a subagent writes
// one checkpoint per step.
var (
	checkpointRunSQL = `UPDATE runs SET tokens = ?, cost_cents = ?, iterations = ?
		WHERE id = ? AND status IN ` + record.ActiveStatuses + ` AND owner = ?`
	checkpointSessionSQL = `INSERT INTO sessions (key, created_at, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)`
	checkpointMessageSQL = `INSERT INTO messages (session_key, role, sender, text, blocks, run_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
)

// CheckpointRun records an active run's counters and appends c.Messages
// to its conversation in one transaction; a run that has ended gives
// store.ErrInvalidTransition, one that is not c.Owner's
// store.ErrStaleOwner, and nothing is stored.
func (s *Store) CheckpointRun(ctx context.Context, id string, c store.Checkpoint) error {
	ref := record.NormalizeRunRef(id)
	if err := errors.Join(record.CheckKey("run ID", ref), record.CheckCounters(c.Tokens, c.CostCents, c.Iterations)); err != nil {
		return fmt.Errorf("checkpoint run: %w", err)
	}
	if _, err := uuid.Parse(ref); err != nil || len(ref) != 36 {
		r, err := s.GetRun(ctx, ref)
		if err != nil {
			return fmt.Errorf("checkpoint run: %w", err)
		}
		ref = r.ID
	}
	msgs := slices.Clone(c.Messages)
	blocks := make([]any, len(msgs))
	for i := range msgs {
		if err := s.rec.CheckMessage(&msgs[i]); err != nil {
			return fmt.Errorf("checkpoint run %s: message %d of %d: %w", ref, i+1, len(msgs), err)
		}
		b, err := record.JSONArg("message blocks", msgs[i].Blocks)
		if err != nil {
			return fmt.Errorf("checkpoint run %s: message %d of %d: %w", ref, i+1, len(msgs), err)
		}
		blocks[i] = b
	}
	var moved bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, checkpointRunSQL, c.Tokens, c.CostCents, c.Iterations, ref, c.Owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		moved = true
		for i, m := range msgs {
			at := record.ToNS(m.CreatedAt)
			if i == 0 || m.SessionKey != msgs[i-1].SessionKey || i == len(msgs)-1 {
				if _, err := tx.ExecContext(ctx, checkpointSessionSQL, m.SessionKey, at, at); err != nil {
					return fmt.Errorf("touch session: %w", err)
				}
			}
			if _, err := tx.ExecContext(ctx, checkpointMessageSQL, m.SessionKey, m.Role, m.Sender, m.Text, blocks[i], m.RunID, at); err != nil {
				return fmt.Errorf("insert message: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoint run %s: %w", ref, err)
	}
	if moved {
		return nil
	}
	st, err := s.runState(ctx, ref)
	if err != nil {
		return fmt.Errorf("checkpoint run: %w", err)
	}
	return fmt.Errorf("checkpoint run: %w", record.Refused(st, c.Owner, nil))
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

func scanRuns(rows pgx.Rows) ([]store.Run, error) {
	defer rows.Close()
	return record.Collect(rows, record.ScanRun)
}

// CreateRun stores a new run and creates its session. A short ID or ID
// already in use gives an error wrapping store.ErrDuplicate.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	return s.createRun(ctx, r, nil)
}

// createRun stores a new run and creates its session, then runs also (if
// not nil) in the same transaction.
func (s *Store) createRun(ctx context.Context, r store.Run, also func(tx pgx.Tx) error) error {
	if err := s.rec.CheckRun(&r); err != nil {
		return fmt.Errorf("create run: %w", err)
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
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if r.Idempotency != nil {
			if err := s.recordIdempotency(ctx, tx, idem); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sessions (key, created_at, updated_at) VALUES ($1, $2, $2)
			ON CONFLICT (key) DO NOTHING`, r.SessionKey, created); err != nil {
			return fmt.Errorf("create run session: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO runs (`+record.RunColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)`,
			r.ID, r.ShortID, r.SessionKey, r.ParentSession, r.ParentAgent, r.GroupID, r.Mode,
			r.Role, r.Task, r.Model, config, string(r.Status), result, r.Error, r.Tokens, r.CostCents,
			r.Iterations, created, record.NullNS(r.StartedAt), record.NullNS(r.EndedAt), r.Announced, r.Owner, r.Attempts,
			r.Active.Milliseconds(), record.NullNS(r.TurnStartedAt))
		if err != nil || also == nil {
			return err
		}
		return also(tx)
	})
	constraint, dup := uniqueViolation(err)
	switch {
	case errors.Is(err, store.ErrKeyUsed):
		return fmt.Errorf("create run %s: %w", r.ShortID, err)
	case dup && constraint == "runs_short_id":
		return fmt.Errorf("create run: short ID %s is already used: %w", r.ShortID, store.ErrDuplicate)
	case dup:
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
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE short_id = $1)`, short).Scan(&exists)
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
	r, err := record.ScanRun(s.pool.QueryRow(ctx,
		`SELECT `+record.RunColumns+` FROM runs WHERE id = $1 OR short_id = $1`, ref))
	if err == nil {
		return r, nil
	}
	if !noRows(err) {
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
		r, err = record.ScanRun(s.pool.QueryRow(ctx, `SELECT `+record.RunColumns+` FROM runs WHERE id = $1`, ids[0]))
		if err != nil {
			return store.Run{}, fmt.Errorf("get run %s: %w", ids[0], err)
		}
		return r, nil
	}
	slices.Sort(shorts)
	return store.Run{}, &store.AmbiguousError{Prefix: idOrPrefix, Candidates: shorts}
}

// likePrefix is a LIKE pattern matching the strings that start with
// prefix, its wildcards and escape character taken literally.
func likePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

// runsWithPrefix returns the IDs and short IDs of the runs whose ID or
// short ID starts with prefix. The columns are COLLATE "C", so LIKE with
// a fixed prefix uses their indexes.
func (s *Store) runsWithPrefix(ctx context.Context, prefix string) (ids, shorts []string, err error) {
	rows, err := s.pool.Query(ctx, `SELECT id, short_id FROM runs WHERE id LIKE $1 OR short_id LIKE $1`,
		likePrefix(prefix))
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
		p     params
	)
	if f.ParentSession != "" {
		where = append(where, "parent_session = "+p.add(f.ParentSession))
	}
	if len(f.Status) > 0 {
		where = append(where, "status IN ("+list(&p, f.Status)+")")
	}
	if f.Role != "" {
		where = append(where, "role = "+p.add(f.Role))
	}
	if f.Active {
		where = append(where, "status IN "+record.ActiveStatuses)
	}
	query := `SELECT ` + record.RunColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY created_at DESC, position DESC`
	if f.Limit > 0 {
		query += ` LIMIT ` + p.add(f.Limit)
	}
	rows, err := s.pool.Query(ctx, query, p...)
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
	err := s.pool.QueryRow(ctx, `SELECT short_id, status, owner FROM runs WHERE id = $1 OR short_id = $1`,
		ref).Scan(&st.Short, &st.Status, &st.Owner)
	if noRows(err) {
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
	err = s.pool.QueryRow(ctx, `SELECT short_id, status FROM runs WHERE id = $1 OR short_id = $1`,
		ref).Scan(&short, &status)
	if noRows(err) {
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
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET tokens = $1, cost_cents = $2, iterations = $3
		WHERE (id = $4 OR short_id = $4) AND status IN `+record.ActiveStatuses,
		tokens, costCents, iterations, ref)
	if err != nil {
		return fmt.Errorf("update run progress %s: %w", ref, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	short, status, err := s.runStatus(ctx, ref)
	if err != nil {
		return fmt.Errorf("update run progress: %w", err)
	}
	return fmt.Errorf("update run progress: run %s has ended (%s): %w", short, status, store.ErrInvalidTransition)
}

// CheckpointRun records an active run's counters and appends c.Messages
// to the conversation, in one transaction (see store.RunStore).
func (s *Store) CheckpointRun(ctx context.Context, id string, c store.Checkpoint) error {
	ref := record.NormalizeRunRef(id)
	if err := errors.Join(record.CheckKey("run ID", ref), record.CheckCounters(c.Tokens, c.CostCents, c.Iterations)); err != nil {
		return fmt.Errorf("checkpoint run: %w", err)
	}
	msgs := slices.Clone(c.Messages)
	for i := range msgs {
		if err := s.rec.CheckMessage(&msgs[i]); err != nil {
			return fmt.Errorf("checkpoint run %s: message %d of %d: %w", ref, i+1, len(msgs), err)
		}
	}
	var moved bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET tokens = $1, cost_cents = $2, iterations = $3
			WHERE (id = $4 OR short_id = $4) AND status IN `+record.ActiveStatuses+` AND owner = $5`,
			c.Tokens, c.CostCents, c.Iterations, ref, c.Owner)
		if err != nil || tag.RowsAffected() != 1 {
			return err
		}
		moved = true
		for _, m := range msgs {
			if _, err := s.insertMessage(ctx, tx, m); err != nil {
				return err
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

// MarkAnnounced marks a finished run's result as delivered without adding
// a message: it reached its parent another way (a waiting tool call), or
// must never reach it (a cancelled run). Marking a run twice is not an
// error. A run still active gives store.ErrInvalidTransition, so a run
// cannot be marked before its result exists.
func (s *Store) MarkAnnounced(ctx context.Context, runID string) error {
	ref := record.NormalizeRunRef(runID)
	if err := record.CheckKey("run ID", ref); err != nil {
		return fmt.Errorf("mark announced: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET announced = TRUE
		WHERE (id = $1 OR short_id = $1) AND status NOT IN `+record.ActiveStatuses, ref)
	if err != nil {
		return fmt.Errorf("mark run %s announced: %w", runID, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	short, status, err := s.runStatus(ctx, ref)
	if err != nil {
		return fmt.Errorf("mark announced: %w", err)
	}
	return fmt.Errorf("mark run %s announced: it is %s, not finished: %w", short, status, store.ErrInvalidTransition)
}

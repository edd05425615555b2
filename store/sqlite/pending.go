package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// CreatePending stores a new pending spawn; an ID already in use gives an
// error wrapping store.ErrDuplicate.
func (s *Store) CreatePending(ctx context.Context, p store.PendingSpawn) error {
	if err := s.rec.CheckPending(&p); err != nil {
		return fmt.Errorf("create pending spawn: %w", err)
	}
	s.rec.Mask.Pending(&p)
	config, err := record.JSONArg("pending spawn config", p.Config)
	if err != nil {
		return fmt.Errorf("create pending spawn %s: %w", p.ID, err)
	}
	tools, err := json.Marshal(p.Tools)
	if err != nil {
		return fmt.Errorf("create pending spawn %s: tools: %w", p.ID, err)
	}
	var idem store.Idempotency
	if p.Idempotency != nil {
		idem = *p.Idempotency
		if err := s.rec.CheckIdempotency(&idem, p.ID); err != nil {
			return fmt.Errorf("create pending spawn %s: %w", p.ID, err)
		}
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if p.Idempotency != nil {
			if err := s.recordIdempotency(ctx, tx, idem); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO pending_spawns (`+record.PendingColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.SessionKey, config, p.EstimateMinSeconds, p.EstimateMaxSeconds, p.MaxCostCents,
			string(tools), p.Rationale, p.Status, record.ToNS(p.CreatedAt), record.ToNS(p.ExpiresAt), p.RunID)
		return err
	})
	if errors.Is(err, store.ErrKeyUsed) {
		return fmt.Errorf("create pending spawn %s: %w", p.ID, err)
	}
	if isUniqueViolation(err) {
		return fmt.Errorf("create pending spawn: ID %s is already used: %w", p.ID, store.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("create pending spawn %s: %w", p.ID, err)
	}
	return nil
}

// GetPending returns the pending spawn id or an error wrapping
// store.ErrNotFound.
func (s *Store) GetPending(ctx context.Context, id string) (store.PendingSpawn, error) {
	if err := record.CheckKey("pending spawn ID", id); err != nil {
		return store.PendingSpawn{}, fmt.Errorf("get pending spawn: %w", err)
	}
	p, err := record.ScanPending(s.reader.QueryRowContext(ctx,
		`SELECT `+record.PendingColumns+` FROM pending_spawns WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.PendingSpawn{}, fmt.Errorf("pending spawn %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.PendingSpawn{}, fmt.Errorf("get pending spawn %s: %w", id, err)
	}
	return p, nil
}

// ListPending returns the session's spawns still awaiting a decision (status
// pending, not yet past ExpiresAt), oldest first; an empty sessionKey lists
// every session's.
func (s *Store) ListPending(ctx context.Context, sessionKey string) ([]store.PendingSpawn, error) {
	query := `SELECT ` + record.PendingColumns + ` FROM pending_spawns WHERE status = ? AND expires_at > ?`
	args := []any{store.SpawnPending, record.ToNS(s.now())}
	if sessionKey != "" {
		query, args = query+` AND session_key = ?`, append(args, sessionKey)
	}
	rows, err := s.reader.QueryContext(ctx, query+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list pending spawns: %w", err)
	}
	defer rows.Close()
	out, err := record.Collect(rows, record.ScanPending)
	if err != nil {
		return nil, fmt.Errorf("list pending spawns: %w", err)
	}
	return out, nil
}

// DecidePending confirms or rejects the pending spawn id, in one
// conditional UPDATE that matches only a spawn still pending and not past
// its ExpiresAt by the store's clock. A non-nil config replaces the
// proposed one (the person's "modify"); runID records the run started from
// it. After ExpiresAt it fails with store.ErrExpired (and marks the spawn
// expired); when already decided, with store.ErrInvalidTransition.
func (s *Store) DecidePending(ctx context.Context, id, decision string, config json.RawMessage, runID string) error {
	if err := record.CheckDecision(id, decision); err != nil {
		return err
	}
	cfg, err := record.JSONArg("pending spawn config", s.rec.Mask.JSON(config))
	if err != nil {
		return fmt.Errorf("decide pending spawn %s: %w", id, err)
	}
	now := record.ToNS(s.now())
	res, err := s.writer.ExecContext(ctx, `UPDATE pending_spawns
		SET status = ?, config = coalesce(?, config), run_id = ?, decided_at = ?
		WHERE id = ? AND status = ? AND expires_at > ?`,
		decision, cfg, runID, now, id, store.SpawnPending, now)
	if err != nil {
		return fmt.Errorf("decide pending spawn %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return s.decideFailure(ctx, id, decision, now)
}

// decideFailure explains why DecidePending matched no row, marking a
// pending spawn found past its expiry as expired.
func (s *Store) decideFailure(ctx context.Context, id, decision string, now int64) error {
	p, err := s.GetPending(ctx, id)
	if err != nil {
		return fmt.Errorf("decide pending spawn: %w", err)
	}
	switch p.Status {
	case store.SpawnPending, store.SpawnExpired:
		if _, err := s.writer.ExecContext(ctx, `UPDATE pending_spawns SET status = ?
			WHERE id = ? AND status = ? AND expires_at <= ?`,
			store.SpawnExpired, id, store.SpawnPending, now); err != nil {
			return fmt.Errorf("decide pending spawn %s: mark expired: %w", id, err)
		}
		return fmt.Errorf("decide pending spawn %s: it expired at %s: %w",
			id, p.ExpiresAt.Format(time.RFC3339), store.ErrExpired)
	}
	return fmt.Errorf("decide pending spawn %s as %s: it is already %s: %w",
		id, decision, p.Status, store.ErrInvalidTransition)
}

// ExpirePending marks every pending spawn whose ExpiresAt is not after
// now as expired and returns those this call marked, in one UPDATE …
// RETURNING: of two processes sweeping at once, each expiry is returned
// to exactly one.
func (s *Store) ExpirePending(ctx context.Context, now time.Time) ([]store.PendingSpawn, error) {
	now = s.rec.OrNow(now)
	rows, err := s.writer.QueryContext(ctx, `UPDATE pending_spawns SET status = ?
		WHERE status = ? AND expires_at <= ? RETURNING `+record.PendingColumns,
		store.SpawnExpired, store.SpawnPending, record.ToNS(now))
	if err != nil {
		return nil, fmt.Errorf("expire pending spawns: %w", err)
	}
	defer rows.Close()
	out, err := record.Collect(rows, record.ScanPending)
	if err != nil {
		return nil, fmt.Errorf("expire pending spawns: %w", err)
	}
	return out, nil
}

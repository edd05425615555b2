package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// EnsureSession returns the session key, creating it if missing.
func (s *Store) EnsureSession(ctx context.Context, key string) (store.Session, error) {
	if err := record.CheckKey("session key", key); err != nil {
		return store.Session{}, fmt.Errorf("ensure session: %w", err)
	}
	now := record.ToNS(s.now())
	// The no-op update makes RETURNING yield the row whether or not it
	// was just inserted.
	row := s.pool.QueryRow(ctx, `
		INSERT INTO sessions (key, created_at, updated_at) VALUES ($1, $2, $2)
		ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key
		RETURNING `+record.SessionColumns, key, now)
	sess, err := record.ScanSession(row)
	if err != nil {
		return store.Session{}, fmt.Errorf("ensure session %s: %w", key, err)
	}
	return sess, nil
}

// GetSession returns the session key or an error wrapping store.ErrNotFound.
func (s *Store) GetSession(ctx context.Context, key string) (store.Session, error) {
	if err := record.CheckKey("session key", key); err != nil {
		return store.Session{}, fmt.Errorf("get session: %w", err)
	}
	row := s.pool.QueryRow(ctx, `SELECT `+record.SessionColumns+` FROM sessions WHERE key = $1`, key)
	sess, err := record.ScanSession(row)
	if noRows(err) {
		return store.Session{}, fmt.Errorf("session %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("get session %s: %w", key, err)
	}
	return sess, nil
}

// AddSessionSpend adds an orchestrator turn's spend to the session's
// total and to its own spend on the model, creating the session if
// missing.
func (s *Store) AddSessionSpend(ctx context.Context, key string, sp store.Spend) error {
	if err := record.CheckKey("session key", key); err != nil {
		return fmt.Errorf("add session spend: %w", err)
	}
	if err := record.CheckAmount("spend", sp.CostCents); err != nil {
		return fmt.Errorf("add session spend %s: %w", key, err)
	}
	if sp.Tokens < 0 {
		return fmt.Errorf("add session spend %s: negative tokens %d", key, sp.Tokens)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		return addSpend(ctx, tx, key, "own", sp, record.ToNS(s.now()))
	})
	if err != nil {
		return fmt.Errorf("add session spend %s: %w", key, err)
	}
	return nil
}

// addSpend adds sp to the session's total and to the source's spend on
// its model.
func addSpend(ctx context.Context, q querier, key, source string, sp store.Spend, now int64) error {
	if _, err := q.Exec(ctx, `
		INSERT INTO sessions (key, created_at, updated_at, spent_cents) VALUES ($1, $2, $2, $3)
		ON CONFLICT (key) DO UPDATE SET
			spent_cents = sessions.spent_cents + EXCLUDED.spent_cents,
			updated_at = EXCLUDED.updated_at`, key, now, sp.CostCents); err != nil {
		return fmt.Errorf("add to session total: %w", err)
	}
	if _, err := q.Exec(ctx, `
		INSERT INTO session_spend (session_key, source, model, tokens, cost_cents, cached_tokens) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (session_key, source, model) DO UPDATE SET
			tokens = session_spend.tokens + EXCLUDED.tokens,
			cost_cents = session_spend.cost_cents + EXCLUDED.cost_cents,
			cached_tokens = session_spend.cached_tokens + EXCLUDED.cached_tokens`,
		key, source, sp.Model, sp.Tokens, sp.CostCents, sp.CachedTokens); err != nil {
		return fmt.Errorf("add to session spend by model: %w", err)
	}
	return nil
}

// SessionSpend rolls up the session's spend.
func (s *Store) SessionSpend(ctx context.Context, key string) (event.Spend, error) {
	m, err := s.SessionSpends(ctx, []string{key})
	return m[key], err
}

// SessionSpends rolls up the spend of several sessions in one query.
func (s *Store) SessionSpends(ctx context.Context, keys []string) (map[string]event.Spend, error) {
	out := map[string]event.Spend{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT session_key, source, model, tokens, cost_cents, cached_tokens FROM session_spend
		WHERE session_key = ANY($1) ORDER BY session_key, cost_cents DESC, model`, keys)
	if err != nil {
		return nil, fmt.Errorf("spend of %d sessions: %w", len(keys), err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key, source, model string
			tokens, cached     int64
			u                  event.Usage
		)
		if err := rows.Scan(&key, &source, &model, &tokens, &u.CostCents, &cached); err != nil {
			return nil, fmt.Errorf("spend of %d sessions: %w", len(keys), err)
		}
		u.Tokens, u.CachedTokens = int(tokens), int(cached)
		sp := out[key]
		sp.Add(source == "subagents", model, u)
		out[key] = sp
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("spend of %d sessions: %w", len(keys), err)
	}
	return out, nil
}

// SetSessionBudget sets the session's cap in cents (0 = none), creating the
// session if missing.
func (s *Store) SetSessionBudget(ctx context.Context, key string, cents float64) error {
	if err := record.CheckKey("session key", key); err != nil {
		return fmt.Errorf("set session budget: %w", err)
	}
	if err := record.CheckAmount("budget", cents); err != nil {
		return fmt.Errorf("set session budget %s: %w", key, err)
	}
	now := record.ToNS(s.now())
	_, err := s.pool.Exec(ctx, `
		INSERT INTO sessions (key, created_at, updated_at, budget_cents) VALUES ($1, $2, $2, $3)
		ON CONFLICT (key) DO UPDATE SET
			budget_cents = EXCLUDED.budget_cents,
			updated_at = EXCLUDED.updated_at`, key, now, cents)
	if err != nil {
		return fmt.Errorf("set session budget %s: %w", key, err)
	}
	return nil
}

// AppendMessage stores m, creating its session if missing, and returns it
// with ID and CreatedAt set.
func (s *Store) AppendMessage(ctx context.Context, m store.Message) (store.Message, error) {
	if err := s.rec.CheckMessage(&m); err != nil {
		return store.Message{}, fmt.Errorf("append message: %w", err)
	}
	if err := s.rec.CheckMessageKey(&m); err != nil {
		return store.Message{}, fmt.Errorf("append message to %s: %w", m.SessionKey, err)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		m.ID, err = s.insertMessage(ctx, tx, m)
		return err
	})
	if err != nil {
		return store.Message{}, fmt.Errorf("append message to %s: %w", m.SessionKey, err)
	}
	return m, nil
}

// AppendMessages implements store.Store.
func (s *Store) AppendMessages(ctx context.Context, msgs []store.Message) error {
	msgs = slices.Clone(msgs) // checked and masked here, not in the caller's slice
	for i := range msgs {
		if err := s.rec.CheckMessage(&msgs[i]); err != nil {
			return fmt.Errorf("append message %d of %d: %w", i+1, len(msgs), err)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := s.checkMessageKeys(msgs); err != nil {
		return err
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		for _, m := range msgs {
			if _, err := s.insertMessage(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append %d messages to %s: %w", len(msgs), msgs[0].SessionKey, err)
	}
	return nil
}

// insertMessage stores a checked message in tx, creating or touching its
// session, and returns the new message ID.
func (s *Store) insertMessage(ctx context.Context, tx pgx.Tx, m store.Message) (int64, error) {
	if err := touchSession(ctx, tx, m.SessionKey, m.CreatedAt); err != nil {
		return 0, err
	}
	if err := titleSession(ctx, tx, m); err != nil {
		return 0, err
	}
	if m.Idempotency != nil {
		if err := s.recordIdempotency(ctx, tx, *m.Idempotency); err != nil {
			return 0, err
		}
	}
	return insertMessageRow(ctx, tx, m)
}

// checkMessageKeys checks and completes the idempotency keys msgs carry
// (record.Checker.CheckMessageKey), in place.
func (s *Store) checkMessageKeys(msgs []store.Message) error {
	for i := range msgs {
		if err := s.rec.CheckMessageKey(&msgs[i]); err != nil {
			return fmt.Errorf("append message to %s: %w", msgs[i].SessionKey, err)
		}
	}
	return nil
}

// titleSession gives an untitled session the default title of m, when m
// is the person's (store.TitleFrom).
func titleSession(ctx context.Context, tx pgx.Tx, m store.Message) error {
	title := record.SessionTitle(m)
	if title == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions SET title = $1 WHERE key = $2 AND title = ''`, title, m.SessionKey); err != nil {
		return fmt.Errorf("title session: %w", err)
	}
	return nil
}

// SetSessionTitle renames the session key.
func (s *Store) SetSessionTitle(ctx context.Context, key, title string) error {
	if err := record.CheckKey("session key", key); err != nil {
		return fmt.Errorf("set session title: %w", err)
	}
	title, err := store.CheckTitle(title)
	if err != nil {
		return fmt.Errorf("set session title %s: %w", key, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET title = $1 WHERE key = $2`, title, key)
	if err != nil {
		return fmt.Errorf("set session title %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("session %s: %w", key, store.ErrNotFound)
	}
	return nil
}

// touchSession creates the session if missing and moves its updated_at
// forward to at.
func touchSession(ctx context.Context, tx pgx.Tx, key string, at time.Time) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO sessions (key, created_at, updated_at) VALUES ($1, $2, $2)
		ON CONFLICT (key) DO UPDATE SET updated_at = GREATEST(sessions.updated_at, EXCLUDED.updated_at)`,
		key, record.ToNS(at)); err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

// insertMessageRow stores a checked message whose session exists.
func insertMessageRow(ctx context.Context, tx pgx.Tx, m store.Message) (int64, error) {
	blocks, err := record.JSONArg("message blocks", m.Blocks)
	if err != nil {
		return 0, err
	}
	var id int64
	err = tx.QueryRow(ctx, `
		INSERT INTO messages (session_key, role, sender, text, blocks, run_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		m.SessionKey, m.Role, m.Sender, m.Text, blocks, m.RunID, record.ToNS(m.CreatedAt)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert message: %w", err)
	}
	return id, nil
}

// Messages returns the session's messages oldest first; with limit > 0,
// only the last limit of them. An unknown session has no messages.
func (s *Store) Messages(ctx context.Context, sessionKey string, limit int) ([]store.Message, error) {
	if err := record.CheckKey("session key", sessionKey); err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	if limit < 0 {
		return nil, fmt.Errorf("list messages of %s: limit must be >= 0, got %d", sessionKey, limit)
	}
	const cols = record.MessageColumns
	query := `SELECT ` + cols + ` FROM messages WHERE session_key = $1 ORDER BY id`
	args := []any{sessionKey}
	if limit > 0 {
		query = `SELECT * FROM (SELECT ` + cols + ` FROM messages WHERE session_key = $1
			ORDER BY id DESC LIMIT $2) AS last ORDER BY id`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list messages of %s: %w", sessionKey, err)
	}
	defer rows.Close()
	out, err := record.Collect(rows, record.ScanMessage)
	if err != nil {
		return nil, fmt.Errorf("list messages of %s: %w", sessionKey, err)
	}
	return out, nil
}

// ListSessions returns the sessions f selects, most recently updated
// first.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	if f.Limit < 0 {
		return nil, fmt.Errorf("list sessions: negative limit %d", f.Limit)
	}
	var p params
	q := `SELECT ` + record.SessionColumns + ` FROM sessions`
	if f.Main {
		q += ` WHERE NOT starts_with(key, ` + p.add(store.SubagentSessionPrefix) + `)`
	}
	q += ` ORDER BY updated_at DESC, key`
	if f.Limit > 0 {
		q += ` LIMIT ` + p.add(f.Limit)
	}
	rows, err := s.pool.Query(ctx, q, p...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	out, err := record.Collect(rows, record.ScanSession)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// CreateLogin stores a web panel login and forgets the expired ones.
func (s *Store) CreateLogin(ctx context.Context, l store.Login) error {
	if err := record.CheckLogin(&l); err != nil {
		return fmt.Errorf("create login: %w", err)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM logins WHERE expires_at < $1`, record.ToNS(l.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO logins (`+record.LoginColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			l.ID, l.CookieHash, l.SecretHash, l.UserAgent, record.ToNS(l.CreatedAt), record.ToNS(l.ExpiresAt))
		return err
	})
	if _, dup := uniqueViolation(err); dup {
		return fmt.Errorf("create login %s: %w", l.ID, store.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("create login %s: %w", l.ID, err)
	}
	return nil
}

// LoginByCookie returns the login whose cookie hash is h.
func (s *Store) LoginByCookie(ctx context.Context, h string) (store.Login, error) {
	if err := record.CheckKey("login cookie hash", h); err != nil {
		return store.Login{}, fmt.Errorf("find login: %w", err)
	}
	l, err := record.ScanLogin(s.pool.QueryRow(ctx, `SELECT `+record.LoginColumns+` FROM logins WHERE cookie_hash = $1`, h))
	if noRows(err) {
		return store.Login{}, fmt.Errorf("find login: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Login{}, fmt.Errorf("find login: %w", err)
	}
	return l, nil
}

// RenewLogin moves a login's expiry.
func (s *Store) RenewLogin(ctx context.Context, id string, until time.Time) error {
	if s.closed.Load() {
		return fmt.Errorf("renew login %s: %w", id, store.ErrClosed)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE logins SET expires_at = $1 WHERE id = $2`, record.ToNS(until), id)
	if err != nil {
		return fmt.Errorf("renew login %s: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("renew login %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Logins returns every stored login, newest first.
func (s *Store) Logins(ctx context.Context) ([]store.Login, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+record.LoginColumns+` FROM logins ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("list logins: %w", err)
	}
	defer rows.Close()
	var out []store.Login
	for rows.Next() {
		l, err := record.ScanLogin(rows)
		if err != nil {
			return nil, fmt.Errorf("list logins: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list logins: %w", err)
	}
	return out, nil
}

// RevokeLogin deletes one login.
func (s *Store) RevokeLogin(ctx context.Context, id string) error {
	if s.closed.Load() {
		return fmt.Errorf("revoke login %s: %w", id, store.ErrClosed)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM logins WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("revoke login %s: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("revoke login %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// RevokeLogins deletes every login.
func (s *Store) RevokeLogins(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, fmt.Errorf("revoke every login: %w", store.ErrClosed)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM logins`)
	if err != nil {
		return 0, fmt.Errorf("revoke every login: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

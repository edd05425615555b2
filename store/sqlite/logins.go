package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// CreateLogin stores a web panel login and forgets the expired ones.
func (s *Store) CreateLogin(ctx context.Context, l store.Login) error {
	if err := record.CheckLogin(&l); err != nil {
		return fmt.Errorf("create login: %w", err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM logins WHERE expires_at < ?`, record.ToNS(l.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO logins (`+record.LoginColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			l.ID, l.CookieHash, l.SecretHash, l.UserAgent, record.ToNS(l.CreatedAt), record.ToNS(l.ExpiresAt))
		return err
	})
	if isUniqueViolation(err) {
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
	l, err := record.ScanLogin(s.reader.QueryRowContext(ctx, `SELECT `+record.LoginColumns+` FROM logins WHERE cookie_hash = ?`, h))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Login{}, fmt.Errorf("find login: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Login{}, fmt.Errorf("find login: %w", err)
	}
	return l, nil
}

// RenewLogin moves a login's expiry.
func (s *Store) RenewLogin(ctx context.Context, id string, until time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE logins SET expires_at = ? WHERE id = ?`, record.ToNS(until), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("renew login %s: %w", id, err)
	}
	return nil
}

// Logins returns every stored login, newest first.
func (s *Store) Logins(ctx context.Context) ([]store.Login, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+record.LoginColumns+` FROM logins ORDER BY created_at DESC, id`)
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
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM logins WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("revoke login %s: %w", id, err)
	}
	return nil
}

// RevokeLogins deletes every login.
func (s *Store) RevokeLogins(ctx context.Context) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM logins`)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("revoke every login: %w", err)
	}
	return int(n), nil
}

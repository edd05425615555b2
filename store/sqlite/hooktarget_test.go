package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/avaagent/ava/store/storetest"
)

// hookTargetVersion is the migration that dropped hook_deliveries.target.
const hookTargetVersion = 14

// TestHookTargetMigration: a store made before hook_deliveries lost its
// target column (a webhook's whole URL in it and in an attempt's error)
// keeps no part of the URL after Open migrates it, and its pending and
// failed deliveries are delivered after a restart to the URL of the
// configuration, found by hook ID.
func TestHookTargetMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, hookTargetVersion-1); err != nil {
		t.Fatal(err)
	}
	m := storetest.NewHookTargetMigration(t)
	due := time.Now().Add(-time.Minute).UnixNano()
	for _, r := range m.Rows {
		if _, err := db.ExecContext(ctx, `INSERT INTO hook_deliveries (hook_id, kind, target, event, session_key, seq, body,
			status, attempts, max_attempts, next_at, last_error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.HookID, r.Kind, r.Target, r.Event, r.SessionKey, r.Seq, r.Body, r.Status, r.Attempts, r.MaxAttempts, due, r.LastError, due, due); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('hook_deliveries') WHERE name = 'target'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("hook_deliveries.target after the migration: %d columns (%v)", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m.Check(t, s)
}

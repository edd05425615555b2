package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver, for goose
	"github.com/pressly/goose/v3"

	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/storetest"
)

// hookTargetVersion is the migration that dropped hook_deliveries.target.
const hookTargetVersion = 16

// TestHookTargetMigration: a database made before hook_deliveries lost
// its target column (a webhook's whole URL in it and in an attempt's
// error) keeps no part of the URL after Open migrates it, and its
// pending and failed deliveries are delivered after a restart to the URL
// of the configuration, found by hook ID (as SQLite's).
func TestHookTargetMigration(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	url := pgtest.EmptyURL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS("migrations"), goose.WithDisableGlobalRegistry(true))
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
			status, attempts, max_attempts, next_at, last_error, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
			r.HookID, r.Kind, r.Target, r.Event, r.SessionKey, r.Seq, r.Body, r.Status, r.Attempts, r.MaxAttempts, due, r.LastError, due); err != nil {
			t.Fatal(err)
		}
	}

	s, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_name = 'hook_deliveries' AND column_name = 'target'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("hook_deliveries.target after the migration: %d columns (%v)", n, err)
	}
	s.Close()
	s, err = postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m.Check(t, s)
}

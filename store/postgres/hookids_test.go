package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/storetest"
)

// hookIDsVersion is the migration that gave hook deliveries their IDs
// for good and their run.
const hookIDsVersion = 19

// TestHookIDMigration: deliveries recorded before their IDs were
// UUIDv7s get one each, and their run, when Open migrates the database;
// one an older ava of the cluster records afterwards (with no ID) gets
// one from the column's default (as SQLite's).
func TestHookIDMigration(t *testing.T) {
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
	if _, err := p.UpTo(ctx, hookIDsVersion-1); err != nil {
		t.Fatal(err)
	}
	m := storetest.NewHookIDMigration()
	insert := func(r storetest.LegacyHookRow, created int64) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `INSERT INTO hook_deliveries (hook_id, kind, event, session_key, seq, body,
			status, attempts, max_attempts, next_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10)`,
			r.HookID, r.Kind, r.Event, r.SessionKey, r.Seq, r.Body, r.Status, r.Attempts, r.MaxAttempts, created); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range m.Rows {
		insert(r, m.Created.UnixNano())
	}
	s, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	insert(m.LateRow, time.Now().UnixNano())
	m.Check(t, s)
}

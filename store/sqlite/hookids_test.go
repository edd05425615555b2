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

// hookIDsVersion is the migration that gave hook deliveries their IDs
// for good and their run.
const hookIDsVersion = 17

// TestHookIDMigration: deliveries recorded before their IDs were
// UUIDv7s get one each, and their run, when Open migrates the store;
// one an older ava records afterwards (with no ID) gets one too.
func TestHookIDMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	m := storetest.NewHookIDMigration()
	insert := func(version int64, rows ...storetest.LegacyHookRow) {
		t.Helper()
		db, err := sql.Open("sqlite", dsn(path, false))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if version > 0 {
			fsys, err := fs.Sub(migrationFiles, "migrations")
			if err != nil {
				t.Fatal(err)
			}
			p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, version); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range rows {
			created := m.Created.UnixNano()
			if r.Seq == m.LateRow.Seq {
				created = time.Now().UnixNano()
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO hook_deliveries (hook_id, kind, event, session_key, seq, body,
				status, attempts, max_attempts, next_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				r.HookID, r.Kind, r.Event, r.SessionKey, r.Seq, r.Body, r.Status, r.Attempts, r.MaxAttempts, created, created, created); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert(hookIDsVersion-1, m.Rows...)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	insert(0, m.LateRow)
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m.Check(t, s)
}

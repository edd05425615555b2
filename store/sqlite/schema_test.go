package sqlite

import (
	"context"
	"database/sql"
	"flag"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"
)

var update = flag.Bool("update", false, "rewrite schema.sql from the migrations")

// TestSchemaSnapshot: schema.sql is exactly what the migrations make,
// and a database created from it has the same schema and versions as one
// migrated step by step; with -update it rewrites schema.sql.
func TestSchemaSnapshot(t *testing.T) {
	ctx := context.Background()
	versions, err := migrationVersions()
	if err != nil {
		t.Fatal(err)
	}
	migrated := freshDB(t, "migrated.db")
	if err := migrateWith(ctx, migrated, slog.New(slog.DiscardHandler), false); err != nil {
		t.Fatal(err)
	}
	want, err := dumpSchema(ctx, migrated, versions)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("schema.sql", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if schemaSnapshot != want {
		t.Fatalf("schema.sql is not what the migrations make; regenerate it:\n\tgo test ./store/sqlite -run TestSchemaSnapshot -update")
	}
	snap := freshDB(t, "snapshot.db")
	if err := migrateWith(ctx, snap, slog.New(slog.DiscardHandler), true); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT type || ' ' || name || ' ' || tbl_name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name`,
		`SELECT version_id || ' ' || is_applied FROM goose_db_version ORDER BY version_id`,
	} {
		a, b := column(t, migrated, q), column(t, snap, q)
		if len(a) != len(b) {
			t.Fatalf("%s: migrated %d rows, snapshot %d", q, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%s row %d:\nmigrated %s\nsnapshot %s", q, i, a[i], b[i])
			}
		}
	}
	// A database made from the snapshot is up to date for goose.
	if err := migrateUp(ctx, snap, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
}

func freshDB(t *testing.T, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(filepath.Join(t.TempDir(), name), false))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func column(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestOpenMigratesAnOlderStore: a store made by an older Ava (its last
// migration not applied) is brought up to date at open, and a store
// already up to date is recognised as such without goose.
func TestOpenMigratesAnOlderStore(t *testing.T) {
	ctx := context.Background()
	versions, err := migrationVersions()
	if err != nil {
		t.Fatal(err)
	}
	db := freshDB(t, "older.db")
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	last := versions[len(versions)-1]
	if _, err := p.UpTo(ctx, versions[len(versions)-2]); err != nil {
		t.Fatal(err)
	}
	if ok, err := upToDate(ctx, db); err != nil || ok {
		t.Fatalf("a store without migration %d: up to date %v, %v", last, ok, err)
	}
	if err := migrate(ctx, db, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if ok, err := upToDate(ctx, db); err != nil || !ok {
		t.Fatalf("after migrate: up to date %v, %v", ok, err)
	}
	if v, err := p.GetDBVersion(ctx); err != nil || v != last {
		t.Fatalf("after migrate the store is at %d (%v), want %d", v, err, last)
	}
}

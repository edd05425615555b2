package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	sqlite3 "modernc.org/sqlite/lib"
)

// ErrReadOnly is wrapped by the error of a write to a store opened with
// Options.ReadOnly.
var ErrReadOnly = errors.New("the store was opened read-only")

// memoryStores numbers the in-memory stores of this process, so that
// each has a database of its own.
var memoryStores atomic.Int64

// openReadOnly opens the store for reading only, creating and writing
// nothing: every connection is query_only and nothing is migrated. While
// the database may be in use (mayBeInUse: a process has it open, or its
// log holds commits) it is opened mode=ro, sharing the locks of those
// using it and reading their latest commits. Otherwise it is opened
// immutable, as the snapshot it is: a
// mode=ro open of a WAL database would create the -wal and -shm files
// where it may, and fail where it may not (SQLite says CANTOPEN, or
// READONLY for want of a -shm file), in which case immutable is tried
// too. A missing file, or one whose schema is older than this program's,
// gives an empty in-memory store instead, with a log line saying so: the
// caller sees no runs rather than an error.
func (s *Store) openReadOnly(ctx context.Context, readConns int) error {
	if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
		s.log.Info("store: no database file yet; reading an empty store", "path", s.path)
		return s.openMemory(ctx, readConns)
	}
	tries := []bool{true}
	if mayBeInUse(s.path) {
		tries = []bool{false, true}
	}
	var lastErr error
	for _, immutable := range tries {
		uri := readOnlyDSN(s.path, immutable)
		if !immutable {
			var err error
			if s.unhold, err = holdHere(s.path); err != nil { // it maps the -shm file
				return describeOpenError(s.path, err)
			}
		}
		current, err := s.openFilePools(ctx, uri, readConns)
		if err == nil && current {
			return nil
		}
		s.closePools()
		s.writer, s.reader, s.unhold = nil, nil, nil
		if err == nil {
			s.log.Warn("store: the database's schema is older than this program's; its figures are not shown until ava runs read-write on it once",
				"path", s.path)
			return s.openMemory(ctx, readConns)
		}
		lastErr = err
		if code := sqliteCode(err) & 0xff; code != sqlite3.SQLITE_CANTOPEN && code != sqlite3.SQLITE_READONLY {
			break
		}
	}
	return describeOpenError(s.path, lastErr)
}

// openFilePools opens both pools on uri and reports whether the file's
// schema is this program's.
func (s *Store) openFilePools(ctx context.Context, uri string, readConns int) (bool, error) {
	var err error
	if s.writer, err = openPool(ctx, uri, 1); err != nil {
		return false, err
	}
	current, err := schemaCurrent(ctx, s.writer)
	if err != nil || !current {
		return false, err
	}
	if s.reader, err = openPool(ctx, uri, readConns); err != nil {
		return false, err
	}
	return true, nil
}

// openMemory opens an empty store in memory, at the current schema,
// shared by both pools and gone at Close.
func (s *Store) openMemory(ctx context.Context, readConns int) error {
	name := fmt.Sprintf("ava-readonly-%d-%d", os.Getpid(), memoryStores.Add(1))
	q := url.Values{}
	q.Set("mode", "memory")
	q.Set("cache", "shared")
	q.Set("_foreign_keys", "1")
	q.Set("_busy_timeout", busyTimeoutMS)
	uri := "file:" + name + "?" + q.Encode()
	var err error
	// The writer keeps the shared database alive until Close.
	if s.writer, err = openPool(ctx, uri, 1); err != nil {
		return err
	}
	if err := migrate(ctx, s.writer, s.log); err != nil {
		return fmt.Errorf("open in-memory store: %w", err)
	}
	if s.reader, err = openPool(ctx, uri+"&_query_only=1", readConns); err != nil {
		return err
	}
	return nil
}

// openPool opens a pool of at most conns connections on uri and checks
// that one opens.
func openPool(ctx context.Context, uri string, conns int) (*sql.DB, error) {
	db := sql.OpenDB(newReadOnlyConnector(uri))
	if conns <= 0 {
		conns = 4
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// readOnlyDSN is the driver's URI for reading path without writing it.
func readOnlyDSN(path string, immutable bool) string {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	q.Set("_busy_timeout", busyTimeoutMS)
	q.Set("_query_only", "1")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// schemaCurrent reports whether db's schema has every embedded
// migration, reading goose's version table without creating it.
func schemaCurrent(ctx context.Context, db *sql.DB) (bool, error) {
	var version sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT MAX(version_id) FROM goose_db_version WHERE is_applied = 1`).Scan(&version)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return false, nil
		}
		return false, fmt.Errorf("read schema version: %w", err)
	}
	latest, err := latestMigration()
	if err != nil {
		return false, err
	}
	return version.Valid && version.Int64 >= latest, nil
}

// latestMigration is the version of the newest embedded migration.
func latestMigration() (int64, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	var latest int64
	for _, e := range entries {
		var v int64
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v > latest {
			latest = v
		}
	}
	return latest, nil
}

// Package postgres is the PostgreSQL backend of package store, on
// github.com/jackc/pgx/v5 (a pgxpool.Pool). The schema is in embedded
// .sql migrations run by goose at Open, one per SQLite migration with the
// same version number, under a PostgreSQL advisory lock so that replicas
// starting together migrate once.
//
// Concurrency. Any number of processes may share one database. Every
// write that reads before it writes locks the rows it reads (SELECT … FOR
// UPDATE) or is a single conditional statement, so the contracts of
// package store hold across processes as they do within one: a run's
// transition is a compare-and-set, a result is announced once, an expiry
// is reported once, and a sequence number taken twice fails with
// event.ErrSeqTaken (the events primary key) so the event hub numbers on.
// A transaction PostgreSQL aborts as a deadlock or serialization failure
// is retried.
//
// Values are stored as SQLite stores them (Unix nanoseconds, JSON as
// text), so both backends return the same values to the byte.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// Logger receives the store's operational logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock for default timestamps and expiry checks; nil
	// means time.Now.
	Now func() time.Time
	// MaxConns caps the connection pool; 0 keeps pgxpool's default (or
	// the URL's pool_max_conns).
	MaxConns int32
	// Redactor masks secrets in the free text the store writes; nil
	// means a zero redact.Redactor, which masks the credential formats
	// it knows but no configured value.
	Redactor *redact.Redactor
	// ReadOnly opens the store for reading only (ava logs): it never
	// migrates, refuses a schema older than this build's, and its
	// connections run read-only transactions, so that nothing can be
	// written through it.
	ReadOnly bool
	// Outbox, when set, names the hook deliveries of each event
	// AppendEvents stores, recorded in the same transaction.
	Outbox store.Outbox
}

// Store is a store.Store on one PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
	// where names the database (host and name, never the password) in
	// errors and logs.
	where string
	log   *slog.Logger
	now   func() time.Time
	rec   record.Checker // checks, fills in, masks and cleans every record written
	// outbox is Options.Outbox.
	outbox store.Outbox

	closeOnce sync.Once
	closed    atomic.Bool // set by Close: writes and event reads give store.ErrClosed
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://user:pass@host/db?…),
// and migrates it to the current schema. Errors name the host and
// database, never the password.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors never repeat the password.
		return nil, fmt.Errorf("open store: database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	s := &Store{
		where:  fmt.Sprintf("postgres %s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database),
		log:    opts.Logger,
		now:    opts.Now,
		outbox: opts.Outbox,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.rec = record.Checker{Now: s.now, Mask: masker(opts.Redactor)}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", s.where, err)
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open store %s: %w", s.where, err)
	}
	prepare := s.migrate
	if opts.ReadOnly {
		prepare = s.checkSchema
	}
	if err := prepare(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open store %s: %w", s.where, err)
	}
	return s, nil
}

// migrate brings the schema up to date with the embedded migrations,
// holding a session advisory lock so concurrent Opens migrate once.
func (s *Store) migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithDisableGlobalRegistry(true), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate schema: %w", err)
	}
	for _, r := range results {
		s.log.Info("store migration applied", "store", s.where, "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// checkSchema fails unless the database's schema is at least this
// build's (for a ReadOnly store, which does not migrate).
func (s *Store) checkSchema(ctx context.Context) error {
	want, err := latestMigration()
	if err != nil {
		return err
	}
	var have int64
	err = s.pool.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&have)
	if pgCode(err) == codeUndefinedTable {
		have, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if have < want {
		return fmt.Errorf("the database schema is at version %d and this ava needs %d; it is opened read-only and not migrated: start an ava of this version on it (any command but logs) to migrate it", have, want)
	}
	return nil
}

// latestMigration is the version of the last embedded migration.
func latestMigration() (int64, error) {
	files, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("embedded migrations: %v", err)
	}
	last := path.Base(files[len(files)-1])
	num, _, _ := strings.Cut(last, "_")
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("migration %s: %w", last, err)
	}
	return v, nil
}

// Where names the database: host, port and name, never the password.
func (s *Store) Where() string { return s.where }

// Close closes the pool. It is safe to call more than once.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// maxTxAttempts bounds the retries of a transaction PostgreSQL aborted as
// a deadlock or serialization failure.
const maxTxAttempts = 8

// inTx runs fn in a transaction, committing if it returns nil. A
// transaction aborted by a deadlock or serialization failure is run
// again from the start, so fn must set its results afresh on each call.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || attempt == maxTxAttempts || !retryable(err) {
			return err
		}
		s.log.Debug("store transaction retried", "store", s.where, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

// PostgreSQL error codes the store acts on.
const (
	codeUniqueViolation      = "23505"
	codeUndefinedTable       = "42P01"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
)

// pgCode returns the SQLSTATE carried by err, or "".
func pgCode(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// retryable reports whether err aborted a transaction that may succeed
// when run again.
func retryable(err error) bool {
	c := pgCode(err)
	return c == codeSerializationFailure || c == codeDeadlockDetected
}

// uniqueViolation returns the constraint a UNIQUE or PRIMARY KEY clash
// in err names, and whether err is one.
func uniqueViolation(err error) (constraint string, ok bool) {
	var e *pgconn.PgError
	if errors.As(err, &e) && e.Code == codeUniqueViolation {
		return e.ConstraintName, true
	}
	return "", false
}

// noRows reports whether err says a query returned no row.
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) }

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Pool is the store's connection pool, for a job queue that shares the
// database and its transactions (package cluster).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.where, err)
	}
	return nil
}

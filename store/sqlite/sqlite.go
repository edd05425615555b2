// Package sqlite is the SQLite backend of package store, on the pure-Go
// driver modernc.org/sqlite. The schema is in embedded .sql migrations run
// by goose at Open.
//
// Connections. The store keeps two pools on the one database file:
//   - the writer has exactly one connection and begins every transaction
//     with BEGIN IMMEDIATE, so writers from any number of goroutines queue
//     for that connection inside database/sql instead of contending for
//     SQLite's write lock, and never get SQLITE_BUSY from each other. A
//     transaction that reads before it writes holds the write lock from its
//     first statement, so its read cannot go stale.
//   - the readers are several query_only connections; in WAL mode they read
//     a consistent snapshot while the writer commits.
//   - a checkpointer has one more, and copies the log back into the
//     database off the writer's commits (checkpoint.go).
//
// Every connection has busy_timeout 5000 ms (it covers another process
// holding the file), foreign_keys on and synchronous NORMAL (durable across
// a process crash; the last commits may be lost on a power cut), and
// keeps the statements it ran prepared (stmtcache.go).
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pressly/goose/v3"
	"golang.org/x/sys/unix"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/avaagent/ava/internal/fserr"
	"github.com/avaagent/ava/internal/groupcommit"
	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// FileName is the store's file name inside the data root.
const FileName = "ava.db"

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection or process before failing.
const busyTimeoutMS = "5000"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// Logger receives the store's operational logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock for default timestamps and expiry checks; nil
	// means time.Now.
	Now func() time.Time
	// ReadConns caps the reader pool; 0 means max(4, GOMAXPROCS).
	ReadConns int
	// Redactor masks secrets in the free text the store writes (see
	// redact.go); nil means a zero redact.Redactor, which masks the
	// credential formats it knows but no configured value.
	Redactor *redact.Redactor
	// ReadOnly opens the store for reading only (ava roles): it creates
	// and writes nothing, not even the file or a migration (see
	// openReadOnly); writes fail with ErrReadOnly.
	ReadOnly bool
	// Outbox, when set, names the hook deliveries of each event
	// AppendEvents stores, recorded in the same transaction.
	Outbox store.Outbox
}

// Store is a store.Store on one SQLite file.
type Store struct {
	path   string
	writer *sql.DB
	reader *sql.DB
	log    *slog.Logger
	now    func() time.Time
	// rec checks, fills in and masks every record written (its Mask
	// masks secrets in every free text).
	rec record.Checker

	closeOnce sync.Once
	closed    atomic.Bool // set by Close: writes and event reads give store.ErrClosed
	closeErr  error
	// readOnly: opened with Options.ReadOnly.
	readOnly bool
	// outbox is Options.Outbox.
	outbox store.Outbox

	// writes is the group commit of write.
	writes groupcommit.Queue[*writeReq]
	// ckpt checkpoints the log (nil when read-only).
	ckpt *checkpointer
	// stopWarm stops warmReader's goroutine and waits for it (nil when
	// read-only).
	stopWarm func()
	// unhold ends this store's count in openHere once its connections
	// are closed (nil when it maps no -shm file: in memory, immutable).
	unhold func()
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if missing, with mode 0600) the SQLite store at path,
// usually filepath.Join(dataRoot, FileName), and migrates it to the current
// schema. A file that is not an SQLite database gives an error naming path.
// With opts.ReadOnly it creates and writes nothing (see openReadOnly).
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if !opts.ReadOnly {
		if err := prepareFile(abs); err != nil {
			return nil, fmt.Errorf("open store %s: %w", abs, err)
		}
	}
	s := &Store{path: abs, log: opts.Logger, now: opts.Now, readOnly: opts.ReadOnly, outbox: opts.Outbox}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.rec = record.Checker{Now: s.now, Mask: record.Masker{Redactor: opts.Redactor}}
	if s.rec.Mask.Redactor == nil {
		s.rec.Mask.Redactor = &redact.Redactor{}
	}
	open := s.openPools
	if s.readOnly {
		open = s.openReadOnly
	} else if s.unhold, err = holdHere(abs); err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := open(ctx, opts.ReadConns); err != nil {
		s.closePools()
		return nil, err
	}
	return s, nil
}

// prepareFile creates the parent directory and an empty database file with
// mode 0600, so the data never exists with looser permissions; SQLite gives
// its -wal and -shm files the same mode.
func prepareFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fserr.Wrap("create data directory", filepath.Dir(path), err)
	}
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return errors.New("is a directory, not a database file")
	case err == nil:
		return checkWritable(path)
	case !errors.Is(err, fs.ErrNotExist):
		return fserr.Wrap("stat", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // created by someone else meanwhile
	}
	if err != nil {
		return fserr.Wrap("create database file", path, err)
	}
	return f.Close()
}

func (s *Store) openPools(ctx context.Context, readConns int) error {
	w := sql.OpenDB(newConnector(dsn(s.path, false)))
	s.writer = w
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		return describeOpenError(s.path, err)
	}
	if err := s.checkJournalMode(ctx); err != nil {
		return err
	}
	if err := s.checkIntegrity(ctx); err != nil {
		return err
	}
	if err := migrate(ctx, w, s.log); err != nil {
		return describeOpenError(s.path, err)
	}

	s.ckpt = startCheckpointer(checkpointerDSN(s.path), s.path, s.log)
	r := sql.OpenDB(newConnector(dsn(s.path, true)))
	s.reader = r
	if readConns <= 0 {
		readConns = max(4, runtime.GOMAXPROCS(0))
	}
	r.SetMaxOpenConns(readConns)
	r.SetMaxIdleConns(readConns)
	s.warmReader()
	return nil
}

// warmReader opens the first reader connection and has it parse the
// schema (about 1.5 ms of SQLite's work) on a goroutine of its own, so
// that a command's first read, a few milliseconds later, finds it ready
// instead of doing that work in line. The writer opened the same file
// already; a reader that cannot open names its error at the first read.
func (s *Store) warmReader() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stopWarm = func() {
		cancel()
		<-done
	}
	go func() {
		defer close(done)
		c, err := s.reader.Conn(ctx)
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.ExecContext(ctx, `SELECT 1 FROM sessions LIMIT 0`)
	}()
}

// dsn builds the driver's URI for path. Reader connections are query_only;
// the writer's transactions begin IMMEDIATE. Only the writer sets
// synchronous: a reader commits nothing, and the pragma would make each
// reader connection parse the whole schema as it opens (about a
// millisecond), where a reader that only polls data_version (the commit
// watcher's) never needs it.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", busyTimeoutMS)
	q.Set("_foreign_keys", "1")
	if readOnly {
		q.Set("_query_only", "1")
	} else {
		q.Set("_synchronous", "NORMAL")
		q.Set("_journal_mode", "WAL")
		q.Set("_txlock", "immediate")
		// The checkpointer copies the log back, off the writer's
		// commits; the writer does so only far less often (see
		// checkpoint.go).
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", writerCheckpointPages))
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// checkpointerDSN is the checkpointer's URI for path: it writes nothing
// but checkpoints.
func checkpointerDSN(path string) string {
	q := url.Values{}
	q.Set("_busy_timeout", busyTimeoutMS)
	q.Set("_synchronous", "NORMAL")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// checkJournalMode warns when the file system refused WAL mode: the store
// still works, but readers then wait for writers.
func (s *Store) checkJournalMode(ctx context.Context) error {
	var mode string
	if err := s.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return describeOpenError(s.path, err)
	}
	if mode != "wal" {
		s.log.Warn("store is not in WAL mode; readers will wait for writers", "path", s.path, "journal_mode", mode)
	}
	return nil
}

// integrityBound is how long the integrity check at open may take; a
// larger database (beyond a few hundred megabytes) is opened unchecked,
// with a warning, rather than delay every start by seconds. A variable
// for the benchmark, which measures the whole check.
var integrityBound = 2 * time.Second

// checkIntegrity runs SQLite's quick_check before anything is written,
// so a database damaged in the middle (a bad disk, a copy cut short) is
// refused with a message that says what to do and left as it is, instead of being
// migrated and written to. quick_check reads every page but skips the
// index cross-checks of integrity_check; it stops at the first problem.
//
// It is skipped when the store is known sound (see knownSound).
func (s *Store) checkIntegrity(ctx context.Context) error {
	if why := s.knownSound(ctx); why != "" {
		s.log.Debug("store integrity check skipped", "path", s.path, "why", why)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, integrityBound)
	defer cancel()
	var first string
	err := s.writer.QueryRowContext(cctx, "PRAGMA quick_check(1)").Scan(&first)
	switch {
	case err != nil && cctx.Err() != nil && ctx.Err() == nil:
		s.log.Warn("store integrity check skipped: the database is too large to check at start", "path", s.path, "bound", integrityBound)
		return nil
	case err != nil:
		return describeOpenError(s.path, err)
	case first != "ok":
		s.forgetSound()
		return fmt.Errorf("open store %s: the database is damaged (SQLite's quick_check: %s); it was left as it is: move it aside (with its -wal and -shm files) to start a new store, or repair a copy with `sqlite3 ava.db .recover`: %w",
			s.path, first, ErrCorrupt)
	}
	return nil
}

// ErrCorrupt is wrapped by the error of a store whose database failed
// its integrity check at open.
var ErrCorrupt = errors.New("database disk image is malformed")

// migrate brings the schema up to date with the embedded migrations. A
// new database (no table yet) is created from the schema snapshot in
// one transaction (createFromSnapshot), without a sync of its own, and
// synced once at the end (its checkpoint): a crash meanwhile leaves a
// database that is new anyway, and a command's first start on a fresh
// data root neither replays every migration nor waits for their syncs.
// An existing database is migrated step by step with the store's normal
// durability.
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	return migrateWith(ctx, db, log, true)
}

// migrateWith is migrate; snapshot false replays the migrations on a new
// database too (TestSchemaSnapshot compares the two).
func migrateWith(ctx context.Context, db *sql.DB, log *slog.Logger, snapshot bool) error {
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&tables); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if tables > 0 {
		if current, err := upToDate(ctx, db); err != nil || current {
			return err
		}
		return migrateUp(ctx, db, log)
	}
	if _, err := db.ExecContext(ctx, `PRAGMA synchronous = OFF`); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	defer db.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`)
	created := false
	if snapshot {
		var err error
		if created, err = createFromSnapshot(ctx, db); err != nil {
			return err
		}
	}
	if !created {
		if err := migrateUp(ctx, db, log); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("migrations: sync: %w", err)
	}
	return nil
}

// migrateUp applies the embedded migrations not applied yet.
func migrateUp(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate schema: %w", err)
	}
	for _, r := range results {
		log.Info("store migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// checkWritable fails when the database file at path, or its -wal or
// -shm file where there is one, cannot be written (a read-only file
// system, another user's file): SQLite would open such a database
// read-only, and only its first write would fail, saying less. It asks
// the system (access(2)), opening nothing: closing a descriptor of the
// file would drop the locks another store of this process holds on it.
func checkWritable(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		err := syscall.Access(p, unix.W_OK)
		if errors.Is(err, fs.ErrNotExist) && p != path {
			continue
		}
		if err != nil {
			perr := &fs.PathError{Op: "access", Path: p, Err: err}
			if p == path {
				return fmt.Errorf("cannot write the file: %s: %w", describeCause(p, perr), perr)
			}
			return fmt.Errorf("cannot write its %s file: %s: %w", strings.TrimPrefix(p, path), describeCause(p, perr), perr)
		}
	}
	return nil
}

// describeOpenError turns the driver's terse errors about a damaged or
// foreign file, a file it may not write or a full disk into one line that
// names the file and says what to do. The file is left as it is.
func describeOpenError(path string, err error) error {
	switch sqliteCode(err) & 0xff {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("open store %s: the file is not a valid SQLite database (corrupt, or another kind of file); it was left as it is: move it aside (with its -wal and -shm files) to start a new store: %w", path, err)
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY:
		// Ask the system why: its answer ("permission denied",
		// "read-only file system") is clearer than SQLite's. It asks
		// access(2) rather than opening the file: closing a
		// descriptor of it would drop the locks another store of this
		// process holds on it.
		if aerr := syscall.Access(path, unix.W_OK); aerr != nil {
			perr := &fs.PathError{Op: "access", Path: path, Err: aerr}
			return fmt.Errorf("open store %s: cannot write the file: %s: %w", path, describeCause(path, perr), err)
		}
		return fmt.Errorf("open store %s: cannot write the file or create its -wal and -shm files next to it; check the permissions of %s and that its file system is writable: %w", path, filepath.Dir(path), err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("open store %s: the disk is full; free some space and try again: %w", path, err)
	case sqlite3.SQLITE_IOERR:
		// SQLite reports a full disk as an I/O error when it cannot
		// grow its -shm or -wal file.
		if fserr.NoSpaceLeft(path) {
			return fmt.Errorf("open store %s: the disk is full; free some space and try again: %w", path, err)
		}
		return fmt.Errorf("open store %s: the file system reported an I/O error reading or writing the file: %w", path, err)
	}
	return fmt.Errorf("open store %s: %w", path, err)
}

// describeCause is fserr's explanation of err, or err's own text.
func describeCause(path string, err error) string {
	if c := fserr.Cause(path, err); c != "" {
		return c
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Path returns the database file's absolute path.
func (s *Store) Path() string { return s.path }

// Close closes both pools. It is safe to call more than once.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() {
		// The writes let in before closed was set commit first: the
		// last commit a lead goroutine of the group commit makes is
		// then in the file before it is closed and marked sound.
		s.writes.Wait()
		s.closeErr = s.closePools()
		if s.closeErr == nil && !s.readOnly {
			// The last connection's checkpoint is in the file now.
			s.markSound()
		}
	})
	return s.closeErr
}

func (s *Store) closePools() error {
	if s.stopWarm != nil {
		s.stopWarm()
	}
	var errs []error
	if s.reader != nil {
		if err := s.reader.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store readers %s: %w", s.path, err))
		}
	}
	if s.ckpt != nil {
		if err := s.ckpt.close(); err != nil {
			errs = append(errs, fmt.Errorf("close store checkpointer %s: %w", s.path, err))
		}
	}
	if s.writer != nil {
		if err := s.writer.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store writer %s: %w", s.path, err))
		}
	}
	if s.unhold != nil {
		s.unhold()
	}
	return errors.Join(errs...)
}

// writeReq is one queued call of write.
type writeReq struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	done chan error
	// state is writeQueued until the leader takes the call into its
	// transaction (writeTaken) or its caller gives up first
	// (writeDropped): whichever comes first decides, so a call whose
	// caller was told it failed is never committed.
	state atomic.Int32
}

// States of a writeReq.
const (
	writeQueued int32 = iota
	writeTaken
	writeDropped
)

// take moves r from queued to taken, and reports whether it did; one
// whose caller gave up gets its context's error.
func (r *writeReq) take() bool {
	if r.state.CompareAndSwap(writeQueued, writeTaken) {
		return true
	}
	r.done <- context.Cause(r.ctx)
	return false
}

// write runs fn in an IMMEDIATE transaction on the writer connection,
// committing if fn returns nil. fn must use only tx: the writer has one
// connection, so touching s.writer inside fn would wait forever.
//
// Concurrent calls are group committed: the first caller becomes the
// leader and runs every call queued meanwhile in one transaction, each
// inside its own savepoint, so a failing fn undoes only its own changes
// and gets its own error, and all the others commit together. Each caller
// returns once the transaction holding its changes has committed.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.closed.Load() {
		return fmt.Errorf("store %s: %w", s.path, store.ErrClosed)
	}
	if s.readOnly {
		return fmt.Errorf("store %s: %w", s.path, ErrReadOnly)
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.writes.Add(r, s.commitWrites)
	select {
	case err := <-r.done:
		return s.describeWriteError(err)
	case <-ctx.Done():
		if r.state.CompareAndSwap(writeQueued, writeDropped) {
			// Still queued behind a commit that does not end (another
			// process holds the database): dropped, never committed.
			return fmt.Errorf("store %s: the write waited too long and was dropped: %w", s.path, context.Cause(ctx))
		}
		// Taken into a transaction already: its outcome is what counts.
		return s.describeWriteError(<-r.done)
	}
}

// describeWriteError names the file and says the disk is full when a
// write failed for want of space (SQLITE_FULL, or an I/O error on a file
// system with no space left); other errors are returned as they are.
func (s *Store) describeWriteError(err error) error {
	if err == nil {
		return nil
	}
	switch sqliteCode(err) & 0xff {
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("store %s: the disk is full; free some space: %w: %w", s.path, store.ErrDiskFull, err)
	case sqlite3.SQLITE_IOERR:
		if fserr.NoSpaceLeft(s.path) {
			return fmt.Errorf("store %s: the disk is full; free some space: %w: %w", s.path, store.ErrDiskFull, err)
		}
	}
	return err
}

// commitWrites commits one batch of queued writes.
func (s *Store) commitWrites(batch []*writeReq) {
	defer s.ckpt.committed()
	batch = slices.DeleteFunc(batch, func(r *writeReq) bool { return !r.take() })
	switch len(batch) {
	case 0:
	case 1:
		batch[0].done <- s.writeOne(batch[0].ctx, batch[0].fn)
	default:
		s.commitBatch(batch)
	}
}

// writeOne runs one fn in its own transaction. As in a batch, the
// call's context is checked before the transaction begins and bounds
// fn's own work; the transaction itself runs detached from it, so that
// neither database/sql nor the driver starts a goroutine to watch it
// (three per transaction: the begin, the transaction, the commit).
func (s *Store) writeOne(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := s.writer.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// commitBatch runs several calls in one transaction, one savepoint each.
func (s *Store) commitBatch(batch []*writeReq) {
	errs := make([]error, len(batch))
	fail := func(err error) {
		for _, r := range batch {
			r.done <- err
		}
	}
	// The batch's own work is bounded by each call's context; the
	// transaction itself must not die with whichever caller leads it.
	tx, err := s.writer.BeginTx(context.WithoutCancel(batch[0].ctx), nil)
	if err != nil {
		fail(fmt.Errorf("begin transaction: %w", err))
		return
	}
	for i, r := range batch {
		errs[i] = s.inSavepoint(tx, r)
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}

// inSavepoint runs r.fn inside a savepoint of tx, undoing its changes
// if it fails.
func (s *Store) inSavepoint(tx *sql.Tx, r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if err := execNoArgs(tx, "SAVEPOINT write_call"); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := r.fn(tx); err != nil {
		if rerr := execNoArgs(tx, "ROLLBACK TO write_call"); rerr != nil {
			return errors.Join(err, fmt.Errorf("roll back to savepoint: %w", rerr))
		}
		_ = execNoArgs(tx, "RELEASE write_call")
		return err
	}
	if err := execNoArgs(tx, "RELEASE write_call"); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// execNoArgs runs a statement without arguments in tx (a savepoint's).
func execNoArgs(tx *sql.Tx, query string) error {
	_, err := tx.Exec(query)
	return err
}

// sqliteCode returns the extended SQLite result code carried by err, or 0.
func sqliteCode(err error) int {
	var e *msqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// isUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY clash.
func isUniqueViolation(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// Ping checks that the database file answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.reader.PingContext(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	return nil
}

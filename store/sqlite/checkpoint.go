package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Checkpoints.
//
// In WAL mode SQLite copies the log back into the database file (a
// checkpoint) once the log passes 1,000 pages, by default on the
// connection that commits past that mark, inside its commit, with an
// fsync of the log and one of the database. With synchronous NORMAL
// those are the only syncs of a commit, and on a busy disk one takes from
// milliseconds to a fraction of a second: every write queued behind that
// commit (the store has one writer) waited for it. Under 1,000
// subagents at once, the spawns' own commits spent most of their time in
// these syncs.
//
// So a checkpointer, on a connection of its own, copies the log back in
// PASSIVE mode once it passes checkpointPages: it copies what no reader
// still needs and syncs, without blocking the writer or the readers.
// The log can only start over from its beginning, though, at the start
// of a write that finds all of it copied, which a steady stream of
// writes never gives a concurrent checkpoint; so the writer still
// checkpoints itself, at writerCheckpointPages (wal_autocheckpoint):
// by then the checkpointer has copied nearly all of it, and the writer
// stalls for its two syncs ten times less often. Starting over, the
// writer truncates the log (journal_size_limit 0), so that the file's
// size says how much is left to copy. The checkpointer looks at that
// size after commits, at most every checkpointEvery. Durability is
// SQLite's with synchronous NORMAL as before: a commit survives a
// process crash; a checkpoint syncs. The last connection to close
// checkpoints what is left, as before.

// checkpointPages is the log size, in pages, past which the
// checkpointer copies it back (SQLite's default autocheckpoint).
const checkpointPages = 1000

// writerCheckpointPages is the log size, in pages, past which the
// writer checkpoints itself (and so lets the log start over).
const writerCheckpointPages = 10 * checkpointPages

// checkpointer checkpoints the store's log on its own connection
// whenever the writer, having committed, finds it past checkpointPages.
type checkpointer struct {
	db      *sql.DB // connects at the first checkpoint
	walPath string
	log     *slog.Logger
	// minBytes is checkpointPages in bytes, known once the connection
	// has read the page size (0 until then).
	minBytes int64

	kick chan struct{} // a commit happened (buffered, one)
	stop chan struct{}
	wg   sync.WaitGroup
}

// startCheckpointer starts the checkpointer of the database at dbPath;
// its connection on dsn opens only when the log first needs a
// checkpoint (a command that writes little never opens it).
func startCheckpointer(dsn, dbPath string, log *slog.Logger) *checkpointer {
	db := sql.OpenDB(newConnector(dsn))
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	c := &checkpointer{db: db, walPath: dbPath + "-wal", log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
	c.wg.Go(c.run)
	return c
}

// minPageSize is SQLite's smallest page size: a log smaller than
// checkpointPages of them needs no checkpoint whatever the page size.
const minPageSize = 512

// due reports whether the log has passed checkpointPages.
func (c *checkpointer) due() (bool, error) {
	info, err := os.Stat(c.walPath)
	if err != nil || info.Size() < checkpointPages*minPageSize {
		return false, nil // no log yet, or a small one
	}
	if c.minBytes == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
		defer cancel()
		var pageSize int64
		if err := c.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
			return false, fmt.Errorf("read page size: %w", err)
		}
		c.minBytes = checkpointPages * pageSize
	}
	return info.Size() >= c.minBytes, nil
}

// committed tells the checkpointer that the writer committed; it never
// blocks. A nil checkpointer (a read-only store) ignores it.
func (c *checkpointer) committed() {
	if c == nil {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// run checkpoints whenever a commit finds the log large enough, until
// close.
func (c *checkpointer) run() {
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		due, err := c.due()
		if err == nil && !due {
			continue
		}
		if err == nil {
			err = c.checkpoint()
		}
		if err != nil {
			c.log.Warn("store checkpoint failed; retried after the next commit", "path", c.walPath, "err", err)
		}
		select {
		case <-c.stop:
			return
		case <-time.After(checkpointEvery):
		}
	}
}

// checkpointEvery is the least time between two checkpoints.
const checkpointEvery = 50 * time.Millisecond

// checkpointTimeout bounds one checkpoint.
const checkpointTimeout = time.Minute

// checkpoint copies what it can of the log into the database.
func (c *checkpointer) checkpoint() error {
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	var busy, logged, copied int
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logged, &copied); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// close stops the goroutine and closes the connection.
func (c *checkpointer) close() error {
	close(c.stop)
	c.wg.Wait()
	return c.db.Close()
}

package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net/url"
	"strings"

	msqlite "modernc.org/sqlite"
)

// Statement cache.
//
// SQLite parses a statement's text each time it is prepared, and
// database/sql prepares every ExecContext and QueryContext that is not
// run through a *sql.Stmt anew. For the store's small statements the
// parse is most of the cost: under 1,000 subagents at once it was a
// third of the writer's time (the writer being the one connection every
// write waits for). So each connection of the store keeps the statements
// it ran, prepared, keyed by their text, and runs them again from there:
// a query is parsed once per connection, whichever function runs it, in
// a transaction or not, with no list of statements to keep up to date.
//
// database/sql never uses a driver connection from two goroutines at
// once (every call, and each Next and Close of its rows, holds the
// connection's lock), so the cache needs no lock of its own.
//
// Inside a transaction a statement runs detached from its context once
// it has checked that the context is not done: the driver would start a
// goroutine per statement to watch the context, only to interrupt a
// statement that, holding the transaction's locks, waits for nothing
// (the statements are small; an interrupted one fails its savepoint
// anyway). Under many concurrent runs those goroutines crowded the
// scheduler's queues that the one writer waits in. Outside a
// transaction a statement can wait for another process's lock, and
// its context still cuts that wait short.

// maxCachedStmts bounds the statements one connection keeps: the
// store's queries are a few dozen texts, but some are built with a
// variable number of placeholders.
const maxCachedStmts = 128

// connector opens connections to one DSN with modernc's driver, each
// wrapped in a statement cache.
type connector struct {
	dsn   string
	drv   *msqlite.Driver
	begin string // the statement a read-write transaction begins with
	// keepLog sets each connection to keep the database's -wal and
	// -shm files (keepLogFiles): the store's read-write connections.
	keepLog bool
}

// newConnector returns a connector for dsn, read-write connections to a
// database file.
func newConnector(dsn string) connector {
	return connector{dsn: dsn, drv: &msqlite.Driver{}, begin: beginStatement(dsn), keepLog: true}
}

// newReadOnlyConnector returns a connector for dsn, read-only connections
// or an in-memory database: they leave the database's files as they are.
func newReadOnlyConnector(dsn string) connector {
	c := newConnector(dsn)
	c.keepLog = false
	return c
}

// beginStatement is the statement the driver would begin a read-write
// transaction on dsn with: BEGIN, with the DSN's _txlock mode if any.
func beginStatement(dsn string) string {
	if _, query, ok := strings.Cut(dsn, "?"); ok {
		if q, err := url.ParseQuery(query); err == nil && q.Get("_txlock") != "" {
			return "BEGIN " + strings.ToUpper(q.Get("_txlock"))
		}
	}
	return "BEGIN"
}

// Connect implements driver.Connector.
func (c connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	b, ok := conn.(baseConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks the context methods", conn)
	}
	if err := c.keepLogFiles(conn); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &cachingConn{baseConn: b, stmts: map[string]*cachedStmt{}, begin: c.begin}, nil
}

// Driver implements driver.Connector.
func (c connector) Driver() driver.Driver { return c.drv }

// baseConn is what the store uses of a modernc connection.
type baseConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// ctxStmt is a prepared statement run with a context.
type ctxStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// cachingConn is a connection that runs ExecContext and QueryContext
// through prepared statements it keeps.
type cachingConn struct {
	baseConn
	stmts map[string]*cachedStmt
	inTx  bool   // a transaction begun with BeginTx is open
	begin string // the statement a read-write transaction begins with
}

// cachedStmt is one kept statement; busy while rows read from it are
// open (the statement cannot run again until they are closed).
type cachedStmt struct {
	st   ctxStmt
	busy bool
}

var (
	_ driver.ExecerContext  = (*cachingConn)(nil)
	_ driver.QueryerContext = (*cachingConn)(nil)
)

// BeginTx implements driver.ConnBeginTx; statements run detached from
// their contexts until the transaction ends. A read-write transaction
// begins and ends with kept statements too (BEGIN, COMMIT and ROLLBACK
// are otherwise parsed anew for each transaction); BEGIN runs with the
// ctx it is given (the store's writes give one detached from the
// caller's, checked before: a write waiting for another process's lock
// waits up to the busy timeout), and COMMIT with ctx once it is known not
// to be done, as the driver's own transactions do.
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if opts.ReadOnly || opts.Isolation != driver.IsolationLevel(0) {
		t, err := c.baseConn.BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		c.inTx = true
		return &cachingTx{Tx: t, c: c}, nil
	}
	if _, err := c.ExecContext(ctx, c.begin, nil); err != nil {
		return nil, err
	}
	c.inTx = true
	return &cachingTx{c: c, ctx: ctx}, nil
}

// cachingTx ends its connection's transaction: the driver's own (Tx
// set), or one begun with the connection's kept BEGIN.
type cachingTx struct {
	driver.Tx
	c   *cachingConn
	ctx context.Context // the context it began with (no Tx)
}

// Commit implements driver.Tx. A kept-statement transaction whose COMMIT
// fails is rolled back, so the connection is left outside a transaction
// as database/sql expects.
func (t *cachingTx) Commit() error {
	t.c.inTx = false
	if t.Tx != nil {
		return t.Tx.Commit()
	}
	if _, err := t.c.ExecContext(t.ctx, "COMMIT", nil); err != nil {
		// SQLite may have ended the transaction already; then there is
		// nothing to roll back and the error says so.
		_, _ = t.c.ExecContext(context.Background(), "ROLLBACK", nil)
		return err
	}
	return nil
}

// Rollback implements driver.Tx. It does not watch the context the
// transaction began with: database/sql rolls back once that is done.
func (t *cachingTx) Rollback() error {
	t.c.inTx = false
	if t.Tx != nil {
		return t.Tx.Rollback()
	}
	_, err := t.c.ExecContext(context.Background(), "ROLLBACK", nil)
	return err
}

// statementContext is the context a statement runs with: ctx, or inside
// a transaction ctx detached, once it is known not to be done.
func (c *cachingConn) statementContext(ctx context.Context) (context.Context, error) {
	if !c.inTx {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// ExecContext implements driver.ExecerContext.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx, err := c.statementContext(ctx)
	if err != nil {
		return nil, err
	}
	st, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.ExecContext(ctx, args)
}

// QueryContext implements driver.QueryerContext. The statement stays
// busy until the rows are closed.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ctx, err := c.statementContext(ctx)
	if err != nil {
		return nil, err
	}
	st, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	return &cachedRows{Rows: r, done: done}, nil
}

// stmt returns query's statement, taken until done is called: the kept
// one, prepared and kept now if the cache has room, or a statement of
// its own (closed by done) when the kept one is busy.
func (c *cachingConn) stmt(ctx context.Context, query string) (ctxStmt, func(), error) {
	if cs, ok := c.stmts[query]; ok && !cs.busy {
		cs.busy = true
		return cs.st, func() { cs.busy = false }, nil
	}
	ds, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	st, ok := ds.(ctxStmt)
	if !ok {
		_ = ds.Close()
		return nil, nil, fmt.Errorf("sqlite driver statement %T lacks the context methods", ds)
	}
	if _, taken := c.stmts[query]; taken || !c.makeRoom() {
		return st, func() { _ = st.Close() }, nil
	}
	cs := &cachedStmt{st: st, busy: true}
	c.stmts[query] = cs
	return st, func() { cs.busy = false }, nil
}

// makeRoom reports whether the cache can keep one more statement,
// dropping an idle one when it is full.
func (c *cachingConn) makeRoom() bool {
	if len(c.stmts) < maxCachedStmts {
		return true
	}
	for q, cs := range c.stmts {
		if !cs.busy {
			_ = cs.st.Close()
			delete(c.stmts, q)
			return true
		}
	}
	return false
}

// Close finalizes the kept statements, then closes the connection.
func (c *cachingConn) Close() error {
	for q, cs := range c.stmts {
		_ = cs.st.Close()
		delete(c.stmts, q)
	}
	return c.baseConn.Close()
}

// cachedRows are rows of a kept statement; Close gives the statement
// back.
type cachedRows struct {
	driver.Rows
	done func()
}

// Close implements driver.Rows.
func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}

// keepLogFiles sets the connection to leave the database's -wal and -shm
// files in place when it is the last to close (SQLITE_FCNTL_PERSIST_WAL),
// the log checkpointed and truncated to nothing (journal_size_limit 0,
// which also truncates it whenever the connection starts it over).
// Every read-write connection sets both, since whichever closes last
// decides. A command that opens the store would otherwise
// create both files anew, and creating a file is the costliest step of
// the file system's (on the project machine's ext4, half a millisecond
// of CPU each, against 5 µs to open one that exists; see
// docs/benchmarks.md).
func (c connector) keepLogFiles(conn driver.Conn) error {
	if !c.keepLog {
		return nil
	}
	fc, ok := conn.(msqlite.FileControl)
	if !ok {
		return fmt.Errorf("sqlite driver connection %T has no file controls", conn)
	}
	if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
		return fmt.Errorf("keep the log files of the store: %w", err)
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		return fmt.Errorf("sqlite driver connection %T cannot execute statements", conn)
	}
	if _, err := ex.ExecContext(context.Background(), "PRAGMA journal_size_limit = 0", nil); err != nil {
		return fmt.Errorf("truncate the store's log when it starts over: %w", err)
	}
	return nil
}

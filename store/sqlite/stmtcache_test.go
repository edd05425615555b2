package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// rawConn runs fn with the driver connection under c.
func rawConn(t *testing.T, c *sql.Conn, fn func(*cachingConn)) {
	t.Helper()
	if err := c.Raw(func(dc any) error {
		cc, ok := dc.(*cachingConn)
		if !ok {
			return fmt.Errorf("driver connection is %T, not *cachingConn", dc)
		}
		fn(cc)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A connection parses a query once and runs it again from its cache,
// also while rows of the same query are still open (a statement of its
// own then), and the cache stays within its bound.
func TestStatementCache(t *testing.T) {
	ctx := t.Context()
	db := sql.OpenDB(newConnector(dsn(filepath.Join(t.TempDir(), "c.db"), false)))
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO t (x) VALUES (?)`
	for i := range 10 {
		if _, err := c.ExecContext(ctx, insert, i); err != nil {
			t.Fatal(err)
		}
	}
	var first ctxStmt
	rawConn(t, c, func(cc *cachingConn) { first = cc.stmts[insert].st })
	if _, err := c.ExecContext(ctx, insert, 10); err != nil {
		t.Fatal(err)
	}
	rawConn(t, c, func(cc *cachingConn) {
		if cs := cc.stmts[insert]; cs == nil || cs.st != first || cs.busy {
			t.Errorf("the insert was not run again from the cache: %+v", cs)
		}
	})

	// The same query while its rows are open: both read every row.
	const all = `SELECT x FROM t ORDER BY x`
	rows, err := c.QueryContext(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	outer, inner := 0, 0
	for rows.Next() {
		outer++
		if outer == 3 {
			in, err := c.QueryContext(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			for in.Next() {
				inner++
			}
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	if outer != 11 || inner != 11 {
		t.Fatalf("read %d rows outside and %d inside, want 11 each", outer, inner)
	}

	for i := range maxCachedStmts + 10 {
		if err := c.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(new(int)); err != nil {
			t.Fatal(err)
		}
	}
	rawConn(t, c, func(cc *cachingConn) {
		if n := len(cc.stmts); n > maxCachedStmts {
			t.Errorf("%d statements kept, want at most %d", n, maxCachedStmts)
		}
	})
}

// Inside a transaction a statement whose context is done is refused,
// though it runs detached from its context otherwise.
func TestStatementInTransactionHonoursDoneContext(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), FileName))
	ctx, cancel := context.WithCancel(t.Context())
	err := s.write(t.Context(), func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET title = '' WHERE key = 'none'`); err != nil {
			return err
		}
		cancel()
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET title = '' WHERE key = 'none'`)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("statement with a cancelled context: %v, want context.Canceled", err)
	}
}

// The checkpointer copies the log back as it grows, and the writer,
// checkpointing itself only at writerCheckpointPages, starts it over
// (truncated): the log stays bounded under steady writes.
func TestCheckpointerKeepsTheLogBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := openAt(t, path)
	var auto int
	if err := s.writer.QueryRowContext(t.Context(), `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if auto != writerCheckpointPages {
		t.Fatalf("writer's wal_autocheckpoint is %d, want %d", auto, writerCheckpointPages)
	}
	text := strings.Repeat("x", 40_000) // about ten pages a message
	key := "ava:test:wal"
	var pageSize int64
	if err := s.writer.QueryRowContext(t.Context(), `PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	bound := 2 * writerCheckpointPages * pageSize
	restarted := false
	var last int64
	for range 3 * writerCheckpointPages / 10 {
		if _, err := s.AppendMessage(t.Context(), store.Message{SessionKey: key, Role: store.RoleUser, Text: text}); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > bound {
			t.Fatalf("the log is %d bytes, over %d: not checkpointed", info.Size(), bound)
		}
		if info.Size() < last {
			restarted = true
			break
		}
		last = info.Size()
	}
	if !restarted {
		t.Fatal("the log never started over")
	}
}

// goroutinesCreated is how many goroutines the process has created.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A write transaction starts one goroutine, database/sql's own for every
// transaction, and not the driver's that watched the contexts of its
// BEGIN and COMMIT (the write's context is checked before it begins and
// bounds its statements); and it begins and commits with the
// connection's kept BEGIN IMMEDIATE and COMMIT, not parsed anew.
func TestWriteStartsNoGoroutine(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), FileName))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	update := func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET title = '' WHERE key = 'none'`)
		return err
	}
	if err := s.write(ctx, update); err != nil {
		t.Fatal(err)
	}
	const writes = 200
	before := goroutinesCreated()
	for range writes {
		if err := s.write(ctx, update); err != nil {
			t.Fatal(err)
		}
	}
	// Slack for the runtime's and the test's own (timers, GC workers).
	if n := goroutinesCreated() - before; n > writes+writes/10 {
		t.Errorf("%d writes created %d goroutines, want one each", writes, n)
	}
	c, err := s.writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rawConn(t, c, func(cc *cachingConn) {
		for _, q := range []string{"BEGIN IMMEDIATE", "COMMIT"} {
			if cc.stmts[q] == nil {
				t.Errorf("%q is not a kept statement of the writer", q)
			}
		}
	})
}

// A write whose context is done when its turn comes is refused, and one
// that fails is rolled back; the writer goes on writing.
func TestWriteDoneContextAndRollback(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), FileName))
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.write(done, func(*sql.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with a cancelled context: %v, want context.Canceled", err)
	}
	ctx := t.Context()
	boom := errors.New("boom")
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE scratch (x INTEGER)`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing write: %v, want boom", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE scratch (x INTEGER)`)
		return err
	})
	if err != nil {
		t.Fatalf("the failed write was not rolled back: %v", err)
	}
}

// TestRunEndStartsNoGoroutine: a run's end (TransitionRun with its
// result, conversation and spend, given a context that can be
// cancelled, as a subagent's is) starts no goroutine beyond the write's
// own: it reads no row set back (database/sql watches each one read
// inside a transaction from a goroutine of its own).
func TestRunEndStartsNoGoroutine(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), FileName))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const runs = 100
	rs := make([]store.Run, runs)
	for i := range rs {
		short := fmt.Sprintf("S-%06x", i+1)
		rs[i] = store.Run{ID: uuid.NewString(), ShortID: short, SessionKey: store.SubagentSessionPrefix + short, ParentSession: "ava:test:main",
			ParentAgent: "ava", Mode: store.ModeSingle, Role: "researcher", Task: "t", Model: "m", Status: lifecycle.Running,
			Owner: "p1", CreatedAt: time.Now()}
		if err := s.CreateRun(ctx, rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	end := func(r store.Run) {
		fin := &store.RunFinish{Result: json.RawMessage(`{"status":"success"}`), Tokens: 12, CostCents: 0.5, Iterations: 1,
			EndedAt: time.Now(), SpendSession: "ava:test:main", Spend: store.Spend{Model: "m", Usage: event.Usage{Tokens: 12, CostCents: 0.5}},
			Messages: []store.Message{{SessionKey: r.SessionKey, Role: store.RoleUser, Sender: store.SenderUser, Text: "task", CreatedAt: time.Now()},
				{SessionKey: r.SessionKey, Role: store.RoleAssistant, Sender: r.ShortID, Text: "done", CreatedAt: time.Now()}}}
		if err := s.TransitionRun(ctx, r.ID, "p1", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, fin); err != nil {
			t.Fatal(err)
		}
	}
	end(rs[0]) // the statements are prepared and kept
	before := goroutinesCreated()
	for _, r := range rs[1:] {
		end(r)
	}
	// One each (database/sql's own for the transaction), with slack for
	// the runtime's and the test's own (timers, GC workers; more under
	// the race detector); reading the rows back made it four each.
	if n := goroutinesCreated() - before; n > 2*(runs-1) {
		t.Errorf("%d run ends created %d goroutines, want one each", runs-1, n)
	}
	for _, r := range rs {
		got, err := s.GetRun(ctx, r.ID)
		if err != nil || got.Status != lifecycle.Success {
			t.Fatalf("run %s: %s %v", r.ShortID, got.Status, err)
		}
		msgs, err := s.Messages(ctx, r.SessionKey, 0)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("run %s's conversation: %d messages, %v", r.ShortID, len(msgs), err)
		}
	}
}

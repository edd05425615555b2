package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/store/postgres/pgtest"
)

// TestPrivateRestartAndPause: a private server restarts on the same URL
// (a connection open across the restart is ended, a new one works) and
// a paused one answers nothing until resumed.
func TestPrivateRestartAndPause(t *testing.T) {
	srv := pgtest.Private(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a connection open across a fast restart still works")
	}
	again, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	defer again.Close(context.Background())
	var n int
	if err := again.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 1 {
		t.Fatalf("data after the restart: %d %v", n, err)
	}

	srv.Pause()
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = again.Exec(short, "SELECT 1")
	cancelShort()
	if err == nil {
		t.Fatal("a paused server answered")
	}
	srv.Resume()
	third, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatalf("after resuming: %v", err)
	}
	defer third.Close(context.Background())
	if err := third.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil || n != 1 {
		t.Fatalf("data after resuming: %d %v", n, err)
	}
}

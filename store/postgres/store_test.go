package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// TestOpenErrorHidesPassword opens a database nobody listens for: the
// error names where, never the password.
func TestOpenErrorHidesPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10e9)
	defer cancel()
	_, err := postgres.Open(ctx, "postgres://ava:hunter2secret@127.0.0.1:1/ava?connect_timeout=2", postgres.Options{})
	if err == nil {
		t.Fatal("Open succeeded with nothing listening")
	}
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("error does not name the server: %v", err)
	}
}

// TestConcurrentOpenMigratesOnce opens several stores on one empty
// database at once, as replicas starting together do: the advisory lock
// makes one of them migrate and the others find the schema ready.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	url := pgtest.EmptyURL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), url, postgres.Options{MaxConns: 2})
			if err == nil {
				_, err = s.EnsureSession(t.Context(), "ava:cli:x")
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestTransitionRaceTwoStores races completion against cancellation from
// two stores (two pools, as two processes) on one database: each time
// exactly one wins and the other is told the status that won.
func TestTransitionRaceTwoStores(t *testing.T) {
	url := pgtest.URL(t)
	a, b := openAt(t, url), openAt(t, url)
	ctx := t.Context()
	for i := range 30 {
		r := store.Run{ID: uuid.NewString(), ShortID: "S-" + uuid.NewString()[:6], Role: "r", Task: "t",
			Status: lifecycle.Running, SessionKey: "ava:subagent:x", ParentSession: "ava:cli:p"}
		r.SessionKey = store.SubagentSessionPrefix + r.ShortID
		if err := a.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var errA, errB error
		running := []lifecycle.Status{lifecycle.Running}
		wg.Go(func() {
			errA = a.TransitionRun(ctx, r.ID, "", running, lifecycle.Success, &store.RunFinish{Result: []byte(`{}`)})
		})
		wg.Go(func() { errB = b.TransitionRun(ctx, r.ShortID, "", running, lifecycle.Cancelled, nil) })
		wg.Wait()
		if (errA == nil) == (errB == nil) {
			t.Fatalf("race %d: complete: %v, cancel: %v; want exactly one to win", i, errA, errB)
		}
		for _, err := range []error{errA, errB} {
			if err != nil && !errors.Is(err, store.ErrInvalidTransition) {
				t.Fatalf("race %d: the loser got %v, want ErrInvalidTransition", i, err)
			}
		}
		got, err := b.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]lifecycle.Status{true: lifecycle.Success, false: lifecycle.Cancelled}[errA == nil]; got.Status != want {
			t.Fatalf("race %d: run is %s, want %s", i, got.Status, want)
		}
	}
}

// TestUnstorableText stores free text PostgreSQL's TEXT cannot hold as
// it is (NUL, invalid UTF-8): it is kept with U+FFFD in their place
// instead of failing the write.
func TestUnstorableText(t *testing.T) {
	s := openAt(t, pgtest.URL(t))
	ctx := t.Context()
	m, err := s.AppendMessage(ctx, store.Message{SessionKey: "ava:cli:bin", Role: store.RoleUser,
		Text: "a\x00b\xffc", Blocks: []byte(`{"t":"x` + "\xfe" + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, "ava:cli:bin", 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("messages: %+v, %v", msgs, err)
	}
	if want := "a\uFFFDb\uFFFDc"; msgs[0].Text != want || m.Text != want {
		t.Fatalf("text stored as %q (returned %q), want %q", msgs[0].Text, m.Text, want)
	}
	if want := `{"t":"x` + "\uFFFD" + `"}`; string(msgs[0].Blocks) != want {
		t.Fatalf("blocks stored as %q, want %q", msgs[0].Blocks, want)
	}
	if _, err := s.WriteMemory(ctx, store.Memory{Content: "binary\x00blob", Tags: []string{"x\xff"}}); err != nil {
		t.Fatal(err)
	}
}

package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/store"
)

func idempotencyCases() []testCase {
	return []testCase{
		{"IdempotencyWithRun", testIdempotencyWithRun},
		{"IdempotencyConcurrentRuns", testIdempotencyConcurrentRuns},
		{"IdempotencyWithPending", testIdempotencyWithPending},
		{"IdempotencyExpires", testIdempotencyExpires},
		{"IdempotencyRecordForget", testIdempotencyRecordForget},
		{"IdempotencyBadKey", testIdempotencyBadKey},
		{"IdempotencyWithMessage", testIdempotencyWithMessage},
		{"IdempotencyConcurrentMessages", testIdempotencyConcurrentMessages},
	}
}

// testIdempotencyWithRun: a run created with a key records the key with
// its short ID; a second run with the same key is refused with
// ErrKeyUsed and not created; another scope's same key is another key.
func testIdempotencyWithRun(t *testing.T, s store.Store) {
	r1 := newRun("S-a00001", "ava:cli:p")
	r1.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: "k-1", RequestHash: "h1"}
	must(t, s.CreateRun(ctx(t), r1))
	k, err := s.GetIdempotency(ctx(t), store.IdempotencySpawn, "k-1")
	must(t, err)
	if k.Result != "S-a00001" || k.RequestHash != "h1" || k.CreatedAt.IsZero() {
		t.Fatalf("GetIdempotency = %+v, want result S-a00001, hash h1, a creation time", k)
	}
	r2 := newRun("S-a00002", "ava:cli:p")
	r2.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: "k-1", RequestHash: "h1"}
	if err := s.CreateRun(ctx(t), r2); !errors.Is(err, store.ErrKeyUsed) {
		t.Fatalf("second CreateRun with the key: %v, want ErrKeyUsed", err)
	}
	if _, err := s.GetRun(ctx(t), r2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused run was stored: GetRun = %v, want ErrNotFound", err)
	}
	if _, err := s.GetIdempotency(ctx(t), store.IdempotencyChat, "k-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the key in another scope: %v, want ErrNotFound", err)
	}
}

// testIdempotencyConcurrentRuns: eight runs created at once under one
// key: exactly one is stored, the others fail with ErrKeyUsed.
func testIdempotencyConcurrentRuns(t *testing.T, s store.Store) {
	const n = 8
	errs := make([]error, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		r := newRun(fmt.Sprintf("S-b0000%d", i), "ava:cli:p")
		ids[i] = r.ID
		wg.Go(func() {
			r.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: "race", RequestHash: "h"}
			errs[i] = s.CreateRun(ctx(t), r)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("runs %d and %d both stored under one key", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, store.ErrKeyUsed):
			t.Fatalf("run %d: %v, want nil or ErrKeyUsed", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no run was stored")
	}
	k, err := s.GetIdempotency(ctx(t), store.IdempotencySpawn, "race")
	must(t, err)
	if want := fmt.Sprintf("S-b0000%d", won); k.Result != want {
		t.Fatalf("the key names %s, want the winner %s", k.Result, want)
	}
	for i := range n {
		_, err := s.GetRun(ctx(t), ids[i])
		if (i == won) != (err == nil) {
			t.Fatalf("run %d: GetRun = %v (winner %d)", i, err, won)
		}
	}
}

// testIdempotencyWithPending: a proposal records its key with its ID,
// and a run cannot take the key afterwards.
func testIdempotencyWithPending(t *testing.T, s store.Store) {
	p := newPending("P-idem01", "ava:cli:a", time.Hour)
	p.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: "pk", RequestHash: "h"}
	must(t, s.CreatePending(ctx(t), p))
	k, err := s.GetIdempotency(ctx(t), store.IdempotencySpawn, "pk")
	must(t, err)
	if k.Result != "P-idem01" {
		t.Fatalf("the key names %q, want P-idem01", k.Result)
	}
	p2 := newPending("P-idem02", "ava:cli:a", time.Hour)
	p2.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: "pk", RequestHash: "h"}
	if err := s.CreatePending(ctx(t), p2); !errors.Is(err, store.ErrKeyUsed) {
		t.Fatalf("second CreatePending with the key: %v, want ErrKeyUsed", err)
	}
	if _, err := s.GetPending(ctx(t), "P-idem02"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused proposal was stored: %v", err)
	}
	r := newRun("S-c00001", "ava:cli:a")
	r.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: "pk", RequestHash: "h"}
	if err := s.CreateRun(ctx(t), r); !errors.Is(err, store.ErrKeyUsed) {
		t.Fatalf("a run with the proposal's key: %v, want ErrKeyUsed", err)
	}
}

// testIdempotencyExpires: a key older than IdempotencyTTL is forgotten
// and may be used again.
func testIdempotencyExpires(t *testing.T, s store.Store) {
	old := &store.Idempotency{Scope: store.IdempotencySpawn, Key: "old", RequestHash: "h",
		CreatedAt: time.Now().Add(-store.IdempotencyTTL - time.Minute)}
	r1 := newRun("S-d00001", "ava:cli:p")
	r1.Idempotency = old
	must(t, s.CreateRun(ctx(t), r1))
	if _, err := s.GetIdempotency(ctx(t), store.IdempotencySpawn, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an expired key: %v, want ErrNotFound", err)
	}
	r2 := newRun("S-d00002", "ava:cli:p")
	r2.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: "old", RequestHash: "h2"}
	must(t, s.CreateRun(ctx(t), r2))
	k, err := s.GetIdempotency(ctx(t), store.IdempotencySpawn, "old")
	must(t, err)
	if k.Result != "S-d00002" || k.RequestHash != "h2" {
		t.Fatalf("the key used again: %+v, want S-d00002 with h2", k)
	}
}

// testIdempotencyRecordForget: a key recorded alone is refused a second
// time; forgotten with another result it stays, with its own it goes.
func testIdempotencyRecordForget(t *testing.T, s store.Store) {
	k := store.Idempotency{Scope: store.IdempotencyChat, Key: "m1", RequestHash: "h", Result: "ava:web:x"}
	must(t, s.RecordIdempotency(ctx(t), k))
	if err := s.RecordIdempotency(ctx(t), k); !errors.Is(err, store.ErrKeyUsed) {
		t.Fatalf("recorded twice: %v, want ErrKeyUsed", err)
	}
	must(t, s.ForgetIdempotency(ctx(t), store.IdempotencyChat, "m1", "ava:web:other"))
	if _, err := s.GetIdempotency(ctx(t), store.IdempotencyChat, "m1"); err != nil {
		t.Fatalf("forgotten under another result: %v, want it kept", err)
	}
	must(t, s.ForgetIdempotency(ctx(t), store.IdempotencyChat, "m1", "ava:web:x"))
	if _, err := s.GetIdempotency(ctx(t), store.IdempotencyChat, "m1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("forgotten: %v, want ErrNotFound", err)
	}
}

// testIdempotencyBadKey: an empty, overlong or unprintable key is
// refused, and a run with one is not stored.
func testIdempotencyBadKey(t *testing.T, s store.Store) {
	var ids []string
	for _, key := range []string{"", strings.Repeat("k", store.MaxIdempotencyKey+1), "a\nb"} {
		if _, err := s.GetIdempotency(ctx(t), store.IdempotencySpawn, key); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetIdempotency(%q) = %v, want a refusal", key, err)
		}
		r := newRun("S-e00001", "ava:cli:p")
		ids = append(ids, r.ID)
		r.Idempotency = &store.Idempotency{Scope: store.IdempotencySpawn, Key: key}
		if err := s.CreateRun(ctx(t), r); err == nil {
			t.Errorf("CreateRun with key %q stored it", key)
		}
	}
	for _, id := range ids {
		if _, err := s.GetRun(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a run with a bad key was stored: %v", err)
		}
	}
}

// testIdempotencyWithMessage: a person's message stored with a key
// records the key with its session key; a second message with the key
// is refused with ErrKeyUsed and not stored, by AppendMessage and
// AppendMessages (all of a batch or none).
func testIdempotencyWithMessage(t *testing.T, s store.Store) {
	key := func() *store.Idempotency {
		return &store.Idempotency{Scope: store.IdempotencyChat, Key: "chat-1", RequestHash: "h1"}
	}
	m := store.Message{SessionKey: "ava:web:idem", Role: store.RoleUser, Sender: store.SenderUser, Text: "hello", Idempotency: key()}
	if _, err := s.AppendMessage(ctx(t), m); err != nil {
		t.Fatalf("AppendMessage with a key: %v", err)
	}
	k, err := s.GetIdempotency(ctx(t), store.IdempotencyChat, "chat-1")
	must(t, err)
	if k.Result != "ava:web:idem" || k.RequestHash != "h1" {
		t.Fatalf("GetIdempotency = %+v, want result ava:web:idem, hash h1", k)
	}
	m.Text = "hello again"
	if _, err := s.AppendMessage(ctx(t), m); !errors.Is(err, store.ErrKeyUsed) {
		t.Fatalf("second AppendMessage with the key: %v, want ErrKeyUsed", err)
	}
	batch := []store.Message{
		{SessionKey: "ava:web:idem", Role: store.RoleUser, Sender: store.SenderUser, Text: "first of a batch"},
		{SessionKey: "ava:web:idem", Role: store.RoleUser, Sender: store.SenderUser, Text: "keyed", Idempotency: key()},
	}
	if err := s.AppendMessages(ctx(t), batch); !errors.Is(err, store.ErrKeyUsed) {
		t.Fatalf("AppendMessages with a used key: %v, want ErrKeyUsed", err)
	}
	got, err := s.Messages(ctx(t), "ava:web:idem", 0)
	must(t, err)
	if len(got) != 1 || got[0].Text != "hello" {
		t.Fatalf("messages = %+v, want only the first \"hello\"", got)
	}
}

// testIdempotencyConcurrentMessages: eight messages stored at once under
// one key: exactly one is stored, the others fail with ErrKeyUsed.
func testIdempotencyConcurrentMessages(t *testing.T, s store.Store) {
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := store.Message{SessionKey: "ava:web:race", Role: store.RoleUser, Sender: store.SenderUser,
				Text: fmt.Sprintf("message %d", i), Idempotency: &store.Idempotency{Scope: store.IdempotencyChat, Key: "race", RequestHash: "h"}}
			_, errs[i] = s.AppendMessage(ctx(t), m)
		})
	}
	wg.Wait()
	stored := 0
	for i, err := range errs {
		switch {
		case err == nil:
			stored++
		case !errors.Is(err, store.ErrKeyUsed):
			t.Fatalf("message %d: %v, want nil or ErrKeyUsed", i, err)
		}
	}
	got, err := s.Messages(ctx(t), "ava:web:race", 0)
	must(t, err)
	if stored != 1 || len(got) != 1 {
		t.Fatalf("%d stored, %d messages, want exactly 1", stored, len(got))
	}
}

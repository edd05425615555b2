package session_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

func TestCheckNewKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"ava:web:abc123", true},
		{"ava:telegram:-100123", true},
		{"ava:my-app:Chat-42.x", true},
		{"ava:telegram:-100123:18f3a2b", true}, // Telegram's /new
		{"ava:slack:T024BE7LD:C024BE91L", true},
		{"ava:x:" + strings.Repeat("a", 128), true},
		{"", false},
		{"mine", false},
		{"ava:web:", false},
		{"ava::x", false},
		{"ava:Web:x", false},
		{"ava:my_app:x", false}, // '_' would let two keys share a session file
		{"ava:web:a_b", false},
		{"ava:web:a::b", false},
		{"ava:web:a:", false},
		{"ava:web:" + strings.Repeat("a", 100) + ":" + strings.Repeat("b", 28), false},
		{"ava:web:.hidden", false},
		{"ava:web:a b", false},
		{"ava:web:a\x00", false},
		{"ava:web:é", false},
		{"ava:x:" + strings.Repeat("a", 129), false},
		{"ava:" + strings.Repeat("c", 33) + ":x", false},
		{"ava:subagent:S-abcdef", false},
		{"ava:subagent:mine", false},
		{"xyz:subagent:S-abcdef", false},
		{"other:web:x", false},
	} {
		err := session.CheckNewKey(tc.key)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, session.ErrBadKey) {
			t.Errorf("CheckNewKey(%q) = %v, want ok %v", tc.key, err, tc.ok)
		}
	}
	// Keys made before the grammar still address their sessions.
	if err := session.CheckKey("myproject"); err != nil {
		t.Errorf("CheckKey(myproject) = %v", err)
	}
}

// The first message to a main session the store does not hold creates
// it when the key may name a new session; any other key is refused
// before anything runs or is stored, and a key stored before the
// grammar goes on.
func TestSendCreatesANewSessionUnderAValidKey(t *testing.T) {
	ctx := context.Background()
	svc, st := storedService(t, "conversations:\n  - turns:\n      - text: \"hi\"\n", &memHistory{msgs: map[string][]llm.Message{}})

	for _, bad := range []string{"mine", "ava:web:a_b", "ava:web:a b", "ava:web:.x"} {
		if _, err := svc.Send(ctx, bad, "hello", session.SendOptions{}); !errors.Is(err, session.ErrBadKey) {
			t.Fatalf("Send to %q: %v, want ErrBadKey", bad, err)
		}
		if _, err := st.GetSession(ctx, bad); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused key %q was stored: %v", bad, err)
		}
	}
	const key = "ava:myapp:42"
	turn, err := svc.Send(ctx, key, "hello", session.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res := wait(t, turn); res.Status != "success" {
		t.Fatalf("first turn %+v", res)
	}
	if _, err := st.GetSession(ctx, key); err != nil {
		t.Fatalf("the first message did not create the session: %v", err)
	}
	if _, err := st.EnsureSession(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}
	turn, err = svc.Send(ctx, "legacy", "hello", session.SendOptions{})
	if err != nil {
		t.Fatalf("a stored session outside the grammar: %v", err)
	}
	wait(t, turn)
}

// storedService is a session service on a new SQLite store, its
// orchestrator answering from script, its history hist.
func storedService(t *testing.T, script string, hist orchestrator.History) (*session.Service, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ava.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := scripted.Parse("t", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	cat := llm.NewCatalog(nil)
	cat.Add(scripted.NewWithScript(s), map[string]string{"sonnet": "t"})
	model, err := cat.Resolve("scripted/t")
	if err != nil {
		t.Fatal(err)
	}
	hub := event.NewHub(nil)
	svc := session.New(session.Config{Hub: hub, Store: st,
		Orchestrator: func(string, session.Limits) (*orchestrator.Orchestrator, llm.Model, error) {
			return orchestrator.New(orchestrator.Config{Model: model, Hub: hub, Sessions: st, History: hist}), model, nil
		}})
	t.Cleanup(func() { svc.Close() })
	return svc, st
}

// countingHistory is memHistory that counts its loads per session.
type countingHistory struct {
	memHistory
	mu    sync.Mutex
	loads map[string]int
}

func (h *countingHistory) Load(ctx context.Context, s string) ([]llm.Message, error) {
	h.mu.Lock()
	h.loads[s]++
	h.mu.Unlock()
	return h.memHistory.Load(ctx, s)
}

func (h *countingHistory) Save(ctx context.Context, s string, m []llm.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.memHistory.Save(ctx, s, m)
}

func (h *countingHistory) count(s string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loads[s]
}

// TestFirstTurnOfANewSessionReadsNoHistory: the turn of the message that
// creates a session reads no history (there is none); a message queued
// behind it, the next turn, and the first turn of a session the store
// already holds do.
func TestFirstTurnOfANewSessionReadsNoHistory(t *testing.T) {
	ctx := context.Background()
	hist := &countingHistory{memHistory: memHistory{msgs: map[string][]llm.Message{}}, loads: map[string]int{}}
	svc, st := storedService(t, slowScript, hist)

	const key = "ava:test:new"
	first, err := svc.Send(ctx, key, "one", session.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := svc.Send(ctx, key, "two", session.SendOptions{Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, first)
	wait(t, queued)
	// One load: the queued turn's (the first turn's would make two).
	if n := hist.count(key); n != 1 {
		t.Fatalf("two turns of a new session loaded its history %d times, want 1 (the queued turn's)", n)
	}
	if got := len(hist.msgs[key]); got != 4 {
		t.Fatalf("history holds %d messages after two turns, want 4", got)
	}

	const old = "ava:test:old"
	if _, err := st.EnsureSession(ctx, old); err != nil {
		t.Fatal(err)
	}
	turn, err := svc.Send(ctx, old, "three", session.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, turn)
	if n := hist.count(old); n != 1 {
		t.Fatalf("the first turn here of a stored session loaded its history %d times, want 1", n)
	}
}

package storetest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/store"
)

func sessionCases() []testCase {
	return []testCase{
		{"SessionEnsureGet", testSessionEnsureGet},
		{"SessionSpendBudget", testSessionSpendBudget},
		{"SessionLastSeqMonotonic", testSessionLastSeqMonotonic},
		{"MessagesOrderAndLimit", testMessagesOrderAndLimit},
		{"MessagesValidation", testMessagesValidation},
		{"ConcurrentWriters", testConcurrentWriters},
	}
}

func testSessionEnsureGet(t *testing.T, s store.Store) {
	const key = "ava:cli:one"
	_, err := s.GetSession(ctx(t), key)
	wantErr(t, err, store.ErrNotFound)

	first, err := s.EnsureSession(ctx(t), key)
	must(t, err)
	if first.Key != key || first.CreatedAt.IsZero() || first.BudgetCents != 0 || first.SpentCents != 0 || first.LastSeq != 0 {
		t.Fatalf("new session = %+v", first)
	}
	again, err := s.EnsureSession(ctx(t), key)
	must(t, err)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Fatalf("EnsureSession on an existing session changed it (-first +again):\n%s", diff)
	}
	got, err := s.GetSession(ctx(t), key)
	must(t, err)
	if diff := cmp.Diff(first, got); diff != "" {
		t.Fatalf("GetSession (-want +got):\n%s", diff)
	}
	_, err = s.EnsureSession(ctx(t), "  ")
	wantPlainErr(t, err)
}

func testSessionSpendBudget(t *testing.T, s store.Store) {
	const key = "ava:web:spend"
	// Spending on a session not yet created creates it.
	must(t, s.AddSessionSpend(ctx(t), key, 1.5))
	must(t, s.AddSessionSpend(ctx(t), key, 2.25))
	must(t, s.SetSessionBudget(ctx(t), key, 50))
	got, err := s.GetSession(ctx(t), key)
	must(t, err)
	if got.SpentCents != 3.75 || got.BudgetCents != 50 {
		t.Fatalf("spent %v budget %v, want 3.75 and 50", got.SpentCents, got.BudgetCents)
	}
	must(t, s.SetSessionBudget(ctx(t), key, 0))
	got, err = s.GetSession(ctx(t), key)
	must(t, err)
	if got.BudgetCents != 0 || got.SpentCents != 3.75 {
		t.Fatalf("after clearing the budget: %+v", got)
	}
	wantPlainErr(t, s.AddSessionSpend(ctx(t), key, -1))
	wantPlainErr(t, s.AddSessionSpend(ctx(t), key, math.NaN()))
	wantPlainErr(t, s.SetSessionBudget(ctx(t), key, math.Inf(1)))
}

func testSessionLastSeqMonotonic(t *testing.T, s store.Store) {
	const key = "ava:cli:seq"
	for _, seq := range []uint64{5, 3, 9, 0} {
		must(t, s.SetLastSeq(ctx(t), key, seq))
	}
	got, err := s.GetSession(ctx(t), key)
	must(t, err)
	if got.LastSeq != 9 {
		t.Fatalf("LastSeq = %d after 5, 3, 9, 0; want 9", got.LastSeq)
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			if err := s.SetLastSeq(ctx(t), key, uint64(i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err = s.GetSession(ctx(t), key)
	must(t, err)
	if got.LastSeq != 99 {
		t.Fatalf("LastSeq = %d after concurrent 0..99; want 99", got.LastSeq)
	}
	wantPlainErr(t, s.SetLastSeq(ctx(t), key, math.MaxUint64))
}

func testMessagesOrderAndLimit(t *testing.T, s store.Store) {
	const a, b = "ava:cli:a", "ava:cli:b"
	var want []store.Message
	for i := range 5 {
		blocks := json.RawMessage(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"a%d"}]}`, i))
		m, err := s.AppendMessage(ctx(t), store.Message{
			SessionKey: a, Role: store.RoleUser, Text: fmt.Sprintf("a%d", i), Blocks: blocks,
			CreatedAt: base.Add(time.Duration(i) * time.Second),
		})
		must(t, err)
		if m.ID == 0 || m.Sender != store.SenderUser {
			t.Fatalf("appended message = %+v, want an ID and the default sender", m)
		}
		want = append(want, m)
		_, err = s.AppendMessage(ctx(t), store.Message{SessionKey: b, Role: store.RoleAssistant, Text: "b"})
		must(t, err)
	}
	for i := 1; i < len(want); i++ {
		if want[i].ID <= want[i-1].ID {
			t.Fatalf("message IDs not increasing: %d then %d", want[i-1].ID, want[i].ID)
		}
	}
	for _, tc := range []struct {
		limit int
		want  []store.Message
	}{{0, want}, {2, want[3:]}, {5, want}, {50, want}} {
		got, err := s.Messages(ctx(t), a, tc.limit)
		must(t, err)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Fatalf("Messages(limit %d) (-want +got):\n%s", tc.limit, diff)
		}
	}
	gotB, err := s.Messages(ctx(t), b, 0)
	must(t, err)
	if len(gotB) != 5 || gotB[0].Sender != store.SenderAva {
		t.Fatalf("session b has %d messages (first %+v), want 5 from ava", len(gotB), gotB[0])
	}
	none, err := s.Messages(ctx(t), "ava:cli:nobody", 0)
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("unknown session has %d messages", len(none))
	}
	if _, err := s.GetSession(ctx(t), a); err != nil {
		t.Fatalf("AppendMessage did not create its session: %v", err)
	}
}

func testMessagesValidation(t *testing.T, s store.Store) {
	_, err := s.AppendMessage(ctx(t), store.Message{SessionKey: "k", Role: "system", Text: "x"})
	wantPlainErr(t, err)
	_, err = s.AppendMessage(ctx(t), store.Message{Role: store.RoleUser, Text: "x"})
	wantPlainErr(t, err)
	_, err = s.AppendMessage(ctx(t), store.Message{SessionKey: "k", Role: store.RoleUser, Blocks: []byte(`{"broken`)})
	wantPlainErr(t, err)
	_, err = s.Messages(ctx(t), "k", -1)
	wantPlainErr(t, err)
	got, err := s.Messages(ctx(t), "k", 0)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("refused messages were stored: %+v", got)
	}
}

// testConcurrentWriters appends from 200 goroutines at once, with spend
// updates and readers mixed in: every write must succeed (no "database is
// busy") and every message must be stored once.
func testConcurrentWriters(t *testing.T, s store.Store) {
	const key, n = "ava:cli:busy", 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := s.AppendMessage(ctx(t), store.Message{SessionKey: key, Role: store.RoleUser, Text: fmt.Sprintf("m%03d", i)})
			if err != nil {
				t.Errorf("append %d: %v", i, err)
			}
			if err := s.AddSessionSpend(ctx(t), key, 1); err != nil {
				t.Errorf("spend %d: %v", i, err)
			}
			if i%10 == 0 {
				if _, err := s.Messages(ctx(t), key, 5); err != nil {
					t.Errorf("read %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	got, err := s.Messages(ctx(t), key, 0)
	must(t, err)
	texts := make([]string, len(got))
	for i, m := range got {
		texts[i] = m.Text
	}
	slices.Sort(texts)
	texts = slices.Compact(texts)
	if len(got) != n || len(texts) != n {
		t.Fatalf("stored %d messages (%d distinct), want %d", len(got), len(texts), n)
	}
	sess, err := s.GetSession(ctx(t), key)
	must(t, err)
	if sess.SpentCents != n {
		t.Fatalf("spent %v after %d concurrent 1-cent spends", sess.SpentCents, n)
	}
}

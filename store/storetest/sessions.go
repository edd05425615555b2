package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
)

func sessionCases() []testCase {
	return []testCase{
		{"SessionEnsureGet", testSessionEnsureGet},
		{"SessionSpendBudget", testSessionSpendBudget},
		{"SessionList", testSessionList},
		{"SessionTitle", testSessionTitle},
		{"EventsNumberedOnce", testEventsNumberedOnce},
		{"EventsReplay", testEventsReplay},
		{"EventsBatchAllOrNone", testEventsBatchAllOrNone},
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
	if first.Key != key || first.CreatedAt.IsZero() || first.BudgetCents != 0 || first.SpentCents != 0 {
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
	must(t, s.AddSessionSpend(ctx(t), key, store.Spend{Model: "m", Usage: event.Usage{CostCents: 1.5}}))
	must(t, s.AddSessionSpend(ctx(t), key, store.Spend{Model: "m", Usage: event.Usage{CostCents: 2.25}}))
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
	wantPlainErr(t, s.AddSessionSpend(ctx(t), key, store.Spend{Model: "m", Usage: event.Usage{CostCents: -1}}))
	wantPlainErr(t, s.AddSessionSpend(ctx(t), key, store.Spend{Model: "m", Usage: event.Usage{CostCents: math.NaN()}}))
	wantPlainErr(t, s.SetSessionBudget(ctx(t), key, math.Inf(1)))
}

func testSessionList(t *testing.T, s store.Store) {
	for _, k := range []string{"ava:web:a", "ava:cli:b", store.SubagentSessionPrefix + "S-0000aa"} {
		_, err := s.EnsureSession(ctx(t), k)
		must(t, err)
	}
	keys := func(ss []store.Session) []string {
		var out []string
		for _, x := range ss {
			out = append(out, x.Key)
		}
		slices.Sort(out)
		return out
	}
	all, err := s.ListSessions(ctx(t), store.SessionFilter{})
	must(t, err)
	if got := keys(all); !slices.Equal(got, []string{"ava:cli:b", "ava:subagent:S-0000aa", "ava:web:a"}) {
		t.Fatalf("all sessions %v", got)
	}
	main, err := s.ListSessions(ctx(t), store.SessionFilter{Main: true})
	must(t, err)
	if got := keys(main); !slices.Equal(got, []string{"ava:cli:b", "ava:web:a"}) {
		t.Fatalf("main sessions %v", got)
	}
	one, err := s.ListSessions(ctx(t), store.SessionFilter{Limit: 1})
	must(t, err)
	if len(one) != 1 {
		t.Fatalf("limit 1 gave %d", len(one))
	}
	_, err = s.ListSessions(ctx(t), store.SessionFilter{Limit: -1})
	wantPlainErr(t, err)
}

// testSessionTitle: a session takes the first line of its first message
// from the person as its title, cut; tool results, notes and answers do
// not title it, and later messages keep it; a rename sticks, and a bad
// title or an unknown session is refused.
func testSessionTitle(t *testing.T, s store.Store) {
	const key = "ava:web:titled"
	_, err := s.EnsureSession(ctx(t), key)
	must(t, err)
	title := func() string {
		t.Helper()
		ss, err := s.GetSession(ctx(t), key)
		must(t, err)
		return ss.Title
	}
	if got := title(); got != "" {
		t.Fatalf("a new session is titled %q", got)
	}
	_, err = s.AppendMessage(ctx(t), store.Message{SessionKey: key, Role: store.RoleSubagent, Text: "[Subagent] done"})
	must(t, err)
	_, err = s.AppendMessage(ctx(t), store.Message{SessionKey: key, Role: store.RoleUser, Sender: store.SenderUser, Text: "  \n"})
	must(t, err)
	if got := title(); got != "" {
		t.Fatalf("titled %q by a note and a blank message", got)
	}
	long := "\n  Find   the three best " + strings.Repeat("papers on sessions ", 10) + "\nsecond line"
	must(t, s.AppendMessages(ctx(t), []store.Message{
		{SessionKey: key, Role: store.RoleUser, Sender: store.SenderUser, Text: long},
		{SessionKey: key, Role: store.RoleAssistant, Text: "On it."},
		{SessionKey: key, Role: store.RoleUser, Sender: store.SenderUser, Text: "and another thing"},
	}))
	if got, want := title(), store.TitleFrom(long); got != want || !strings.HasPrefix(got, "Find the three best papers") || !strings.HasSuffix(got, "…") ||
		utf8.RuneCountInString(got) > 60 {
		t.Fatalf("title %q, want %q (the first line, cut)", got, want)
	}
	must(t, s.SetSessionTitle(ctx(t), key, "  Reading\tlist  "))
	_, err = s.AppendMessage(ctx(t), store.Message{SessionKey: key, Role: store.RoleUser, Sender: store.SenderUser, Text: "more"})
	must(t, err)
	if got := title(); got != "Reading list" {
		t.Fatalf("after a rename: %q", got)
	}
	list, err := s.ListSessions(ctx(t), store.SessionFilter{Main: true})
	must(t, err)
	if i := slices.IndexFunc(list, func(x store.Session) bool { return x.Key == key }); i < 0 || list[i].Title != "Reading list" {
		t.Fatalf("listed %+v", list)
	}
	if err := s.SetSessionTitle(ctx(t), key, " \n "); !errors.Is(err, store.ErrBadTitle) {
		t.Fatalf("empty title: %v", err)
	}
	if err := s.SetSessionTitle(ctx(t), key, strings.Repeat("x", store.MaxTitleRunes+1)); !errors.Is(err, store.ErrBadTitle) {
		t.Fatalf("long title: %v", err)
	}
	wantErr(t, s.SetSessionTitle(ctx(t), "ava:web:nobody", "x"), store.ErrNotFound)
}

func newEvent(session string, seq uint64) event.Event {
	ev := event.New(event.ToolCall, event.ToolCallContent{ID: fmt.Sprint(seq), Name: "read_file", Args: []byte(`{"path":"a"}`)})
	ev.Session, ev.Seq, ev.Agent, ev.Time = session, seq, event.OrchestratorID, time.Now().UTC()
	return ev
}

// testEventsNumberedOnce checks that a sequence number is stored once per
// session: concurrent appends of the same numbers (two processes) have
// exactly one winner each, the others get ErrSeqTaken.
func testEventsNumberedOnce(t *testing.T, s store.Store) {
	const key = "ava:cli:events"
	last, err := s.LastSeq(ctx(t), key)
	must(t, err)
	if last != 0 {
		t.Fatalf("LastSeq of a new session = %d", last)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[uint64]int{}
	for g := range 4 {
		wg.Go(func() {
			for seq := uint64(1); seq <= 50; seq++ {
				err := s.AppendEvents(ctx(t), []event.Event{newEvent(key, seq)})
				switch {
				case err == nil:
					mu.Lock()
					wins[seq]++
					mu.Unlock()
				case !errors.Is(err, event.ErrSeqTaken):
					t.Errorf("writer %d, #%d: %v", g, seq, err)
				}
			}
		})
	}
	wg.Wait()
	for seq := uint64(1); seq <= 50; seq++ {
		if wins[seq] != 1 {
			t.Fatalf("#%d stored %d times", seq, wins[seq])
		}
	}
	if last, err = s.LastSeq(ctx(t), key); err != nil || last != 50 {
		t.Fatalf("LastSeq = %d, %v; want 50", last, err)
	}
	// Another session's numbers are its own.
	must(t, s.AppendEvents(ctx(t), []event.Event{newEvent("ava:cli:other", 1)}))
	wantPlainErr(t, s.AppendEvents(ctx(t), []event.Event{newEvent(key, 0)}))
	wantPlainErr(t, s.AppendEvents(ctx(t), []event.Event{newEvent(key, math.MaxUint64)}))
}

func testEventsReplay(t *testing.T, s store.Store) {
	const key = "ava:subagent:S-0a0b0c"
	for seq := uint64(1); seq <= 10; seq++ {
		must(t, s.AppendEvents(ctx(t), []event.Event{newEvent(key, seq)}))
	}
	all, err := s.ReadEvents(ctx(t), key, 0, 0)
	must(t, err)
	if len(all) != 10 || all[0].Seq != 1 || all[9].Seq != 10 || all[3].Type != event.ToolCall || all[3].Session != key {
		t.Fatalf("all events: %+v", all)
	}
	some, err := s.ReadEvents(ctx(t), key, 4, 3)
	must(t, err)
	if len(some) != 3 || some[0].Seq != 5 || some[2].Seq != 7 {
		t.Fatalf("after 4, limit 3: %+v", some)
	}
	none, err := s.ReadEvents(ctx(t), key, 10, 0)
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("after the last: %+v", none)
	}
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
			if err := s.AddSessionSpend(ctx(t), key, store.Spend{Model: "m", Usage: event.Usage{CostCents: 1}}); err != nil {
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

// testEventsBatchAllOrNone stores a batch whole or not at all: one taken
// number refuses the batch with ErrSeqTaken and stores none of it.
func testEventsBatchAllOrNone(t *testing.T, s store.Store) {
	const key = "ava:cli:batch"
	must(t, s.AppendEvents(ctx(t), []event.Event{newEvent(key, 1), newEvent(key, 2)}))
	err := s.AppendEvents(ctx(t), []event.Event{newEvent(key, 3), newEvent(key, 2)})
	wantErr(t, err, event.ErrSeqTaken)
	if last, err := s.LastSeq(ctx(t), key); err != nil || last != 2 {
		t.Fatalf("LastSeq after a refused batch = %d, %v; want 2", last, err)
	}
	must(t, s.AppendEvents(ctx(t), []event.Event{newEvent(key, 3), newEvent(key, 4), newEvent(key, 5)}))
	evs, err := s.ReadEvents(ctx(t), key, 0, 0)
	if err != nil || len(evs) != 5 || evs[4].Seq != 5 {
		t.Fatalf("events %v %v", evs, err)
	}
}

package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

func transitionCases() []testCase {
	return []testCase{
		{"TransitionRun", testTransitionRun},
		{"TransitionRace", testTransitionRace},
		{"TransitionResume", testTransitionResume},
		{"MarkInterrupted", testMarkInterrupted},
		{"RecoverOwnerResumes", testRecoverOwnerResumes},
		{"RecoverOwnerOnce", testRecoverOwnerOnce},
		{"StaleOwnerFenced", testStaleOwnerFenced},
		{"RecoverOwnerLeaseRenewed", testRecoverOwnerLeaseRenewed},
		{"CheckpointRun", testCheckpointRun},
		{"Instances", testInstances},
		{"AnnounceResultOnce", testAnnounceResultOnce},
		{"AnnounceConcurrentRuns", testAnnounceConcurrentRuns},
		{"MarkAnnounced", testMarkAnnounced},
		{"Unannounced", testUnannounced},
		{"FinishWithSpendAndDelivery", testFinishWithSpendAndDelivery},
		{"FinishTouchesSessions", testFinishTouchesSessions},
		{"RunFiguresOverTurns", testRunFiguresOverTurns},
		{"ConcurrentCreatesIsolateFailures", testConcurrentCreatesIsolateFailures},
		{"AppendMessagesAllOrNone", testAppendMessagesAllOrNone},
	}
}

// A finish's conversation touches the run's own session at the latest
// of now and its messages' times, and the session of a message in
// another at that message's latest time; a run is finished by its short
// ID as by its ID.
func testFinishTouchesSessions(t *testing.T, s store.Store) {
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for i, ref := range []func(store.Run) string{func(r store.Run) string { return r.ID }, func(r store.Run) string { return r.ShortID }} {
		r := createRun(t, s, newRun(shortID(0xf1f0+i), "ava:cli:touch"))
		other := fmt.Sprintf("ava:cli:touch-other-%d", i)
		fin := &store.RunFinish{Tokens: 3, Messages: []store.Message{
			{SessionKey: r.SessionKey, Role: store.RoleUser, Sender: store.SenderUser, Text: "task", CreatedAt: later.Add(-time.Minute)},
			{SessionKey: other, Role: store.RoleAssistant, Sender: r.ShortID, Text: "aside", CreatedAt: later.Add(-2 * time.Minute)},
			{SessionKey: other, Role: store.RoleAssistant, Sender: r.ShortID, Text: "aside again", CreatedAt: later.Add(-30 * time.Second)},
			{SessionKey: r.SessionKey, Role: store.RoleAssistant, Sender: r.ShortID, Text: "done", CreatedAt: later}}}
		must(t, s.TransitionRun(ctx(t), ref(r), "", lifecycle.Active, lifecycle.Success, fin))
		own, err := s.GetSession(ctx(t), r.SessionKey)
		must(t, err)
		if !own.UpdatedAt.Equal(later) {
			t.Errorf("ref %d: the run's session updated at %v, want %v (its latest message)", i, own.UpdatedAt, later)
		}
		aside, err := s.GetSession(ctx(t), other)
		must(t, err)
		if want := later.Add(-30 * time.Second); !aside.UpdatedAt.Equal(want) {
			t.Errorf("ref %d: the other session updated at %v, want %v (its latest message)", i, aside.UpdatedAt, want)
		}
		msgs, err := s.Messages(ctx(t), r.SessionKey, 0)
		must(t, err)
		if len(msgs) != 2 || msgs[0].Text != "task" || msgs[1].Text != "done" || msgs[0].ID == 0 || msgs[1].ID <= msgs[0].ID {
			t.Errorf("ref %d: the run's conversation %+v", i, msgs)
		}
		if msgs, _ := s.Messages(ctx(t), other, 0); len(msgs) != 2 {
			t.Errorf("ref %d: the other session's messages %+v", i, msgs)
		}
	}
}

// A finish can add the run's cost to a session and mark the result
// delivered in the same write; a refused transition does neither.
func testFinishWithSpendAndDelivery(t *testing.T, s store.Store) {
	r := createRun(t, s, newRun("S-0e0e0e", "ava:cli:spend"))
	fin := &store.RunFinish{CostCents: 7.5, Tokens: 10, Delivered: true, SpendSession: "ava:cli:spend",
		Spend:    store.Spend{Model: "anthropic/claude-haiku", Usage: event.Usage{Tokens: 10, CostCents: 7.5, CachedTokens: 4}},
		Messages: []store.Message{{SessionKey: r.SessionKey, Role: store.RoleAssistant, Sender: r.ShortID, Text: "done"}}}
	must(t, s.TransitionRun(ctx(t), r.ID, "", lifecycle.Active, lifecycle.Success, fin))
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if !got.Announced {
		t.Fatal("Delivered did not mark the run announced")
	}
	sess, err := s.GetSession(ctx(t), "ava:cli:spend")
	must(t, err)
	if sess.SpentCents != 7.5 {
		t.Fatalf("session spent %v, want 7.5", sess.SpentCents)
	}
	// The roll-up: the run under its model, beside the session's own turns.
	// Cached tokens (read from the provider's prompt cache) roll up too.
	must(t, s.AddSessionSpend(ctx(t), "ava:cli:spend", store.Spend{Model: "anthropic/claude-sonnet", Usage: event.Usage{Tokens: 100, CostCents: 2, CachedTokens: 60}}))
	must(t, s.AddSessionSpend(ctx(t), "ava:cli:spend", store.Spend{Model: "anthropic/claude-haiku", Usage: event.Usage{Tokens: 5, CostCents: 0.5}}))
	sp, err := s.SessionSpend(ctx(t), "ava:cli:spend")
	must(t, err)
	want := event.Spend{Own: event.Usage{Tokens: 105, CostCents: 2.5, CachedTokens: 60}, Subagents: event.Usage{Tokens: 10, CostCents: 7.5, CachedTokens: 4},
		Total: event.Usage{Tokens: 115, CostCents: 10, CachedTokens: 64},
		ByModel: []event.ModelSpend{{Model: "anthropic/claude-haiku", Usage: event.Usage{Tokens: 15, CostCents: 8, CachedTokens: 4}},
			{Model: "anthropic/claude-sonnet", Usage: event.Usage{Tokens: 100, CostCents: 2, CachedTokens: 60}}}}
	if diff := cmp.Diff(want, sp); diff != "" {
		t.Fatalf("SessionSpend (-want +got):\n%s", diff)
	}
	many, err := s.SessionSpends(ctx(t), []string{"ava:cli:spend", "ava:cli:nothing"})
	must(t, err)
	if diff := cmp.Diff(map[string]event.Spend{"ava:cli:spend": want}, many); diff != "" {
		t.Fatalf("SessionSpends (-want +got):\n%s", diff)
	}
	msgs, err := s.Messages(ctx(t), r.SessionKey, 0)
	must(t, err)
	if len(msgs) != 1 || msgs[0].Text != "done" {
		t.Fatalf("finish messages %+v", msgs)
	}
	err = s.TransitionRun(ctx(t), r.ID, "", lifecycle.Active, lifecycle.Error, fin)
	if !errors.Is(err, store.ErrInvalidTransition) {
		t.Fatalf("second finish: %v", err)
	}
	sess, _ = s.GetSession(ctx(t), "ava:cli:spend")
	if sess.SpentCents != 10 {
		t.Fatalf("a refused transition still spent: %v", sess.SpentCents)
	}
	if msgs, _ := s.Messages(ctx(t), r.SessionKey, 0); len(msgs) != 1 {
		t.Fatalf("a refused transition still stored messages: %d", len(msgs))
	}
}

func testTransitionRun(t *testing.T, s store.Store) {
	r := createRun(t, s, newRun("S-0c0c0c", "ava:cli:p"))
	if r.StartedAt != nil || r.EndedAt != nil {
		t.Fatalf("new run has times set: %+v", r)
	}
	must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Pending}, lifecycle.Running, nil))
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if got.Status != lifecycle.Running || got.StartedAt == nil || got.EndedAt != nil {
		t.Fatalf("after start: status %s started %v ended %v", got.Status, got.StartedAt, got.EndedAt)
	}

	ended := base.Add(time.Hour)
	fin := &store.RunFinish{Result: []byte(`{"summary":"ok","confidence":0.9}`), Error: "",
		Tokens: 321, CostCents: 1.75, Iterations: 3, EndedAt: ended}
	must(t, s.TransitionRun(ctx(t), r.ShortID, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, fin))
	got, err = s.GetRun(ctx(t), r.ID)
	must(t, err)
	want := r
	want.Status, want.Result, want.Tokens, want.CostCents, want.Iterations = lifecycle.Success, fin.Result, 321, 1.75, 3
	want.StartedAt, want.TurnStartedAt, want.EndedAt = got.StartedAt, got.StartedAt, &ended
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after finish (-want +got):\n%s", diff)
	}

	err = s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Cancelled, nil)
	wantErr(t, err, store.ErrInvalidTransition)
	if !strings.Contains(err.Error(), string(lifecycle.Success)) {
		t.Fatalf("refused transition error %q does not name the current status", err)
	}
	wantErr(t, s.TransitionRun(ctx(t), uuid.NewString(), "", []lifecycle.Status{lifecycle.Running}, lifecycle.Error, nil), store.ErrNotFound)
	wantPlainErr(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Success}, "finished", nil))
	wantPlainErr(t, s.TransitionRun(ctx(t), r.ID, "", nil, lifecycle.Error, nil))
	wantPlainErr(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Success}, lifecycle.Running, &store.RunFinish{}))

	// The lifecycle table is the store's too: a finished run never goes
	// back to pending, and a run never moves to its own status.
	for _, edge := range [][2]lifecycle.Status{{lifecycle.Success, lifecycle.Pending},
		{lifecycle.Success, lifecycle.Success}, {lifecycle.Success, lifecycle.Cancelled}} {
		err = s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{edge[0]}, edge[1], nil)
		wantErr(t, err, store.ErrInvalidTransition)
	}
	if got, _ := s.GetRun(ctx(t), r.ID); got.Status != lifecycle.Success {
		t.Fatalf("after refused transitions the run is %s", got.Status)
	}
	// A new run starts active.
	done := newRun("S-0c0c0d", "ava:cli:p")
	done.Status = lifecycle.Success
	wantPlainErr(t, s.CreateRun(ctx(t), done))
}

// testTransitionRace races completion against cancellation: 100
// goroutines, half moving each run running→success and half
// running→cancelled. Exactly one may win; every other gets
// ErrInvalidTransition; the stored status is the winner's.
func testTransitionRace(t *testing.T, s store.Store) {
	for round := range 3 {
		r := newRun(shortID(0xa00+round), "ava:cli:race")
		r.Status = lifecycle.Running
		r = createRun(t, s, r)
		var (
			wins   atomic.Int32
			winner atomic.Value
			start  = make(chan struct{})
			wg     sync.WaitGroup
		)
		for i := range 100 {
			to := lifecycle.Success
			if i%2 == 1 {
				to = lifecycle.Cancelled
			}
			wg.Go(func() {
				<-start
				err := s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Running}, to,
					&store.RunFinish{Result: []byte(`"` + to + `"`), Tokens: i})
				switch {
				case err == nil:
					wins.Add(1)
					winner.Store(to)
				case !errors.Is(err, store.ErrInvalidTransition):
					t.Errorf("loser %d got %v, want ErrInvalidTransition", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d transitions won, want exactly 1", round, n)
		}
		got, err := s.GetRun(ctx(t), r.ID)
		must(t, err)
		w := winner.Load().(lifecycle.Status)
		if got.Status != w || string(got.Result) != `"`+string(w)+`"` {
			t.Fatalf("round %d: stored status %s result %s, but %s won", round, got.Status, got.Result, w)
		}
	}
}

// testTransitionResume checks that a finished run sent a follow-up
// (success → running) can be announced again when it finishes anew.
func testTransitionResume(t *testing.T, s store.Store) {
	const parent = "ava:cli:resume"
	r := createRun(t, s, newRun("S-0d0d0d", parent))
	finish(t, s, r.ID, lifecycle.Success)
	ok, err := s.AnnounceResult(ctx(t), r.ID, "", store.Message{Text: "[Task: find] first"})
	must(t, err)
	if !ok {
		t.Fatal("first announcement refused")
	}
	must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Success}, lifecycle.Running, nil))
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if got.Announced || got.EndedAt != nil || got.StartedAt == nil {
		t.Fatalf("resumed run: announced %v ended %v started %v", got.Announced, got.EndedAt, got.StartedAt)
	}
	finish(t, s, r.ID, lifecycle.Success)
	ok, err = s.AnnounceResult(ctx(t), r.ID, "", store.Message{Text: "[Task: find] second"})
	must(t, err)
	if !ok {
		t.Fatal("the resumed run's result was not announced")
	}
	msgs, err := s.Messages(ctx(t), parent, 0)
	must(t, err)
	if len(msgs) != 2 || msgs[1].Text != "[Task: find] second" {
		t.Fatalf("parent messages = %+v, want both results", msgs)
	}
}

// testMarkInterrupted ends the active runs of one owner only: another
// owner's live runs and finished runs are left alone.
func testMarkInterrupted(t *testing.T, s store.Store) {
	var dead []string
	for i, status := range []lifecycle.Status{lifecycle.Pending, lifecycle.Running, lifecycle.Success, lifecycle.Running, lifecycle.Running} {
		r := newRun(shortID(0xb00+i), "ava:cli:p")
		r.Status, r.Owner = status, "dead"
		if i == 4 {
			r.Owner = "alive"
		}
		r = createRun(t, s, r)
		if status != lifecycle.Success && r.Owner == "dead" {
			dead = append(dead, r.ID)
		}
	}
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "dead", Host: "h", PID: 1}))
	slices.Sort(dead)
	at := base.Add(2 * time.Hour)
	runs, err := s.InterruptOwner(ctx(t), "dead", at)
	must(t, err)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
		if r.Status != lifecycle.Interrupted || r.EndedAt == nil || !r.EndedAt.Equal(at) || r.Error == "" || r.Owner != "dead" {
			t.Fatalf("interrupted run = status %s ended %v error %q owner %q", r.Status, r.EndedAt, r.Error, r.Owner)
		}
	}
	slices.Sort(ids)
	if diff := cmp.Diff(dead, ids); diff != "" {
		t.Fatalf("InterruptOwner ids (-want +got):\n%s", diff)
	}
	alive, err := s.ListRuns(ctx(t), store.RunFilter{Active: true})
	must(t, err)
	if len(alive) != 1 || alive[0].Owner != "alive" {
		t.Fatalf("active runs after InterruptOwner: %+v", alive)
	}
	insts, err := s.Instances(ctx(t))
	must(t, err)
	if len(insts) != 0 {
		t.Fatalf("the dead instance is still registered: %+v", insts)
	}
	runs, err = s.InterruptOwner(ctx(t), "dead", at)
	must(t, err)
	if len(runs) != 0 {
		t.Fatalf("second InterruptOwner returned %v", runs)
	}
}

// testInstances registers, heartbeats and removes instances.
func testInstances(t *testing.T, s store.Store) {
	start := base
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "i1", Host: "h1", PID: 42, StartedAt: start, HeartbeatAt: start}))
	must(t, s.Heartbeat(ctx(t), "i1", start.Add(time.Minute)))
	must(t, s.Heartbeat(ctx(t), "i1", start.Add(time.Second))) // never moves back
	insts, err := s.Instances(ctx(t))
	must(t, err)
	want := []store.Instance{{ID: "i1", Host: "h1", PID: 42, StartedAt: start, HeartbeatAt: start.Add(time.Minute)}}
	if diff := cmp.Diff(want, insts); diff != "" {
		t.Fatalf("instances (-want +got):\n%s", diff)
	}
	must(t, s.RemoveInstance(ctx(t), "i1"))
	wantErr(t, s.Heartbeat(ctx(t), "i1", start), store.ErrNotFound)
	must(t, s.RemoveInstance(ctx(t), "i1"))
}

// testAnnounceResultOnce announces one result from 50 goroutines at once:
// exactly one call delivers it, and the parent holds it once.
func testAnnounceResultOnce(t *testing.T, s store.Store) {
	const parent = "ava:cli:orchestrator"
	r := newRun("S-0e0e0e", parent)
	r.Status = lifecycle.Running
	r = createRun(t, s, r)
	_, err := s.AnnounceResult(ctx(t), r.ID, "", store.Message{Text: "too early"})
	wantErr(t, err, store.ErrInvalidTransition)
	finish(t, s, r.ID, lifecycle.Success)

	var (
		delivered atomic.Int32
		wg        sync.WaitGroup
	)
	for range 50 {
		wg.Go(func() {
			ok, err := s.AnnounceResult(ctx(t), r.ShortID, "", store.Message{
				Text: "[Task: find the answer] 42", Blocks: []byte(`{"role":"user"}`),
			})
			if err != nil {
				t.Errorf("announce: %v", err)
			}
			if ok {
				delivered.Add(1)
			}
		})
	}
	wg.Wait()
	if n := delivered.Load(); n != 1 {
		t.Fatalf("result delivered %d times, want exactly once", n)
	}
	msgs, err := s.Messages(ctx(t), parent, 0)
	must(t, err)
	if len(msgs) != 1 {
		t.Fatalf("parent holds %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.RunID != r.ID || m.Role != store.RoleSubagent || m.Sender != store.SenderSubagent || m.SessionKey != parent {
		t.Fatalf("announced message = %+v", m)
	}
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if !got.Announced {
		t.Fatal("run not marked announced")
	}

	other := newRun("S-0e0e0f", parent)
	other.Status = lifecycle.Error
	other = createRun(t, s, other)
	_, err = s.AnnounceResult(ctx(t), other.ID, "", store.Message{SessionKey: "ava:cli:elsewhere", Text: "x"})
	wantPlainErr(t, err)
	_, err = s.AnnounceResult(ctx(t), uuid.NewString(), "", store.Message{Text: "x"})
	wantErr(t, err, store.ErrNotFound)
	if msgs, _ := s.Messages(ctx(t), "ava:cli:elsewhere", 0); len(msgs) != 0 {
		t.Fatalf("a refused announcement was stored: %+v", msgs)
	}
}

// testAnnounceConcurrentRuns announces 100 different runs at once. Each
// announcement reads its run before writing, so a backend that lets such
// transactions interleave fails here with a busy or stale-snapshot error.
func testAnnounceConcurrentRuns(t *testing.T, s store.Store) {
	const parent, n = "ava:cli:many", 100
	ids := make([]string, n)
	for i := range n {
		r := newRun(shortID(0xd00+i), parent)
		r.Status = lifecycle.Success
		ids[i] = createRun(t, s, r).ID
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i, id := range ids {
		wg.Go(func() {
			<-start
			ok, err := s.AnnounceResult(ctx(t), id, "", store.Message{Text: "result"})
			if err != nil || !ok {
				t.Errorf("announce run %d: delivered %v, err %v", i, ok, err)
			}
		})
	}
	close(start)
	wg.Wait()
	msgs, err := s.Messages(ctx(t), parent, 0)
	must(t, err)
	if len(msgs) != n {
		t.Fatalf("parent holds %d results, want %d", len(msgs), n)
	}
	owed, err := s.Unannounced(ctx(t))
	must(t, err)
	if len(owed) != 0 {
		t.Fatalf("%d runs still unannounced", len(owed))
	}
}

// testMarkAnnounced marks results delivered without a message: the run
// is no longer owed, and a later AnnounceResult adds nothing.
func testMarkAnnounced(t *testing.T, s store.Store) {
	const parent = "ava:cli:marked"
	r := newRun("S-0e1e1e", parent)
	r.Status = lifecycle.Running
	r = createRun(t, s, r)
	wantErr(t, s.MarkAnnounced(ctx(t), r.ID), store.ErrInvalidTransition)
	finish(t, s, r.ID, lifecycle.Cancelled)
	must(t, s.MarkAnnounced(ctx(t), r.ShortID))
	must(t, s.MarkAnnounced(ctx(t), r.ID)) // twice is fine
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if !got.Announced {
		t.Fatal("run not marked announced")
	}
	owed, err := s.Unannounced(ctx(t))
	must(t, err)
	if len(owed) != 0 {
		t.Fatalf("a marked run is still owed: %+v", owed)
	}
	ok, err := s.AnnounceResult(ctx(t), r.ID, "", store.Message{Text: "late"})
	must(t, err)
	msgs, err := s.Messages(ctx(t), parent, 0)
	must(t, err)
	if ok || len(msgs) != 0 {
		t.Fatalf("AnnounceResult after MarkAnnounced delivered %v, parent holds %d messages", ok, len(msgs))
	}
	wantErr(t, s.MarkAnnounced(ctx(t), "S-fff000"), store.ErrNotFound)
}

func testUnannounced(t *testing.T, s store.Store) {
	mk := func(short, parent string, status lifecycle.Status, at time.Time) store.Run {
		r := newRun(short, parent)
		r.Status, r.CreatedAt = lifecycle.Running, at
		r = createRun(t, s, r)
		if status != lifecycle.Running {
			must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Running}, status,
				&store.RunFinish{EndedAt: at.Add(time.Minute)}))
		}
		r, err := s.GetRun(ctx(t), r.ID)
		must(t, err)
		return r
	}
	owedLater := mk("S-0f0001", "ava:cli:p", lifecycle.Timeout, base.Add(time.Hour))
	owed := mk("S-0f0002", "ava:cli:p", lifecycle.Success, base)
	mk("S-0f0003", "", lifecycle.Success, base)          // no parent
	mk("S-0f0004", "ava:cli:p", lifecycle.Running, base) // not finished
	told := mk("S-0f0005", "ava:cli:p", lifecycle.Cancelled, base)
	ok, err := s.AnnounceResult(ctx(t), told.ID, "", store.Message{Text: "cancelled"})
	must(t, err)
	if !ok {
		t.Fatal("announcement refused")
	}
	got, err := s.Unannounced(ctx(t))
	must(t, err)
	if diff := cmp.Diff([]store.Run{owed, owedLater}, got); diff != "" {
		t.Fatalf("Unannounced (-want +got):\n%s", diff)
	}
}

// Concurrent writes that fail (a duplicate short ID) fail alone: every
// other write of the same moment is stored.
func testConcurrentCreatesIsolateFailures(t *testing.T, s store.Store) {
	const n = 60
	createRun(t, s, newRun(shortID(0x900), "ava:cli:iso"))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := shortID(0xa00 + i)
			if i%5 == 0 {
				id = shortID(0x900) // taken
			}
			errs[i] = s.CreateRun(ctx(t), newRun(id, "ava:cli:iso"))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%5 == 0 {
			if !errors.Is(err, store.ErrDuplicate) {
				t.Errorf("write %d: %v, want ErrDuplicate", i, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("write %d failed beside a failing one: %v", i, err)
			continue
		}
		if _, err := s.GetRun(ctx(t), shortID(0xa00+i)); err != nil {
			t.Errorf("write %d not stored: %v", i, err)
		}
	}
}

// AppendMessages stores a batch in order, or nothing when one is bad.
func testAppendMessagesAllOrNone(t *testing.T, s store.Store) {
	key := "ava:cli:batch"
	batch := []store.Message{{SessionKey: key, Role: store.RoleUser, Sender: store.SenderUser, Text: "one"},
		{SessionKey: key, Role: store.RoleAssistant, Sender: store.SenderAva, Text: "two"}}
	must(t, s.AppendMessages(ctx(t), batch))
	bad := []store.Message{{SessionKey: key, Role: store.RoleUser, Sender: store.SenderUser, Text: "three"},
		{SessionKey: key, Role: "narrator", Text: "four"}}
	if err := s.AppendMessages(ctx(t), bad); err == nil {
		t.Fatal("a batch with a bad message was accepted")
	}
	got, err := s.Messages(ctx(t), key, 0)
	must(t, err)
	if len(got) != 2 || got[0].Text != "one" || got[1].Text != "two" {
		t.Fatalf("messages %+v", got)
	}
}

// testRecoverOwnerResumes takes over the runs Resume picks (their
// status stays, the owner and attempts change), quarantines a picked run
// that used up its attempts, and interrupts the rest.
func testRecoverOwnerResumes(t *testing.T, s store.Store) {
	mk := func(n int, status lifecycle.Status, role string, attempts int) store.Run {
		r := newRun(shortID(0xc00+n), "ava:cli:p")
		r.Status, r.Owner, r.Role, r.Attempts = status, "dead", role, attempts
		return createRun(t, s, r)
	}
	resume := mk(1, lifecycle.Running, "researcher", 0)
	queued := mk(2, lifecycle.Queued, "researcher", 1)
	spent := mk(3, lifecycle.Running, "researcher", 3)
	never := mk(4, lifecycle.Running, "code_reviewer", 0)
	done := mk(5, lifecycle.Success, "researcher", 0)
	if resume.Attempts != 0 || spent.Attempts != 3 {
		t.Fatalf("attempts as created: %d, %d", resume.Attempts, spent.Attempts)
	}
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "dead", Host: "h", PID: 1}))
	at := base.Add(time.Hour)
	tk := store.Takeover{Owner: "heir", MaxAttempts: 3, Resume: func(r store.Run) bool { return r.Role == "researcher" }}
	resumed, ended, err := s.RecoverOwner(ctx(t), "dead", at, tk)
	must(t, err)
	byID := map[string]store.Run{}
	for _, r := range resumed {
		byID[r.ID] = r
	}
	if len(resumed) != 2 {
		t.Fatalf("resumed %d runs, want 2: %+v", len(resumed), resumed)
	}
	for _, want := range []store.Run{resume, queued} {
		got := byID[want.ID]
		if got.Owner != "heir" || got.Status != want.Status || got.Attempts != want.Attempts+1 || got.EndedAt != nil {
			t.Fatalf("taken over %s: owner %q status %s attempts %d ended %v", want.ShortID, got.Owner, got.Status, got.Attempts, got.EndedAt)
		}
	}
	if len(ended) != 2 {
		t.Fatalf("ended %d runs, want 2: %+v", len(ended), ended)
	}
	for _, r := range ended {
		if r.Status != lifecycle.Interrupted || r.EndedAt == nil || !r.EndedAt.Equal(at) {
			t.Fatalf("ended run %s: status %s ended %v", r.ShortID, r.Status, r.EndedAt)
		}
		switch r.ID {
		case spent.ID:
			if r.Error != store.QuarantinedError || r.Attempts != 3 {
				t.Fatalf("quarantined run: error %q attempts %d", r.Error, r.Attempts)
			}
		case never.ID:
			if r.Error == "" || r.Error == store.QuarantinedError {
				t.Fatalf("interrupted run's error %q", r.Error)
			}
		default:
			t.Fatalf("ended an unexpected run %s", r.ShortID)
		}
	}
	got, err := s.GetRun(ctx(t), done.ID)
	must(t, err)
	if got.Status != lifecycle.Success || got.Owner != "dead" {
		t.Fatalf("a finished run was touched: %+v", got)
	}
	insts, err := s.Instances(ctx(t))
	must(t, err)
	if len(insts) != 0 {
		t.Fatalf("the dead instance is still registered: %+v", insts)
	}
	// The heir's runs are its own now: recovering "dead" again finds nothing.
	resumed, ended, err = s.RecoverOwner(ctx(t), "dead", at, tk)
	must(t, err)
	if len(resumed)+len(ended) != 0 {
		t.Fatalf("second RecoverOwner: %v %v", resumed, ended)
	}
	// The dead owner's late end is refused (fenced); the heir's is taken.
	wantErr(t, s.TransitionRun(ctx(t), resume.ID, "dead", lifecycle.Active, lifecycle.Success, nil), store.ErrStaleOwner)
	// A resumed run ends as any run does, and its result is announced once.
	must(t, s.TransitionRun(ctx(t), resume.ID, "heir", lifecycle.Active, lifecycle.Success, &store.RunFinish{Result: []byte(`{}`)}))
	ok, err := s.AnnounceResult(ctx(t), resume.ID, "", store.Message{Text: "[Task: find] done"})
	must(t, err)
	if !ok {
		t.Fatal("the resumed run's result was not announced")
	}
}

// testRecoverOwnerOnce has 20 processes recover one gone owner at once:
// each run is taken over or ended by exactly one of them.
func testRecoverOwnerOnce(t *testing.T, s store.Store) {
	const n = 30
	for i := range n {
		r := newRun(shortID(0xd00+i), "ava:cli:p")
		r.Status, r.Owner = lifecycle.Running, "dead"
		createRun(t, s, r)
	}
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "dead", Host: "h", PID: 1}))
	type got struct{ resumed, ended []store.Run }
	out := make(chan got, 20)
	for i := range 20 {
		go func() {
			tk := store.Takeover{Owner: fmt.Sprintf("heir-%d", i), MaxAttempts: 3, Resume: func(r store.Run) bool { return r.ShortID < shortID(0xd00+n/2) }}
			res, end, err := s.RecoverOwner(ctx(t), "dead", time.Time{}, tk)
			if err != nil {
				t.Error(err)
			}
			out <- got{res, end}
		}()
	}
	seen := map[string]int{}
	var resumed, ended int
	for range 20 {
		g := <-out
		for _, r := range g.resumed {
			seen[r.ID]++
			resumed++
		}
		for _, r := range g.ended {
			seen[r.ID]++
			ended++
		}
	}
	if len(seen) != n || resumed != n/2 || ended != n/2 {
		t.Fatalf("recovered %d runs (%d resumed, %d ended), want %d (%d, %d)", len(seen), resumed, ended, n, n/2, n/2)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("run %s recovered %d times", id, c)
		}
	}
}

// testCheckpointRun appends a running run's steps to its conversation
// with its counters, then its end's messages after them; an ended run,
// or another owner's, takes no checkpoint.
func testCheckpointRun(t *testing.T, s store.Store) {
	r := newRun("S-0c0c0c", "ava:cli:p")
	r.Status, r.Owner = lifecycle.Running, "me"
	r = createRun(t, s, r)
	msg := func(role, text string) store.Message {
		return store.Message{SessionKey: r.SessionKey, Role: role, Sender: r.ShortID, Text: text}
	}
	must(t, s.CheckpointRun(ctx(t), r.ID, store.Checkpoint{Owner: "me", Tokens: 10, CostCents: 0.5, Iterations: 1,
		Messages: []store.Message{msg(store.RoleUser, "task"), msg(store.RoleAssistant, "call")}}))
	must(t, s.CheckpointRun(ctx(t), r.ShortID, store.Checkpoint{Owner: "me", Tokens: 12, CostCents: 0.6, Iterations: 1,
		Messages: []store.Message{msg(store.RoleUser, "result")}}))
	wantErr(t, s.CheckpointRun(ctx(t), r.ID, store.Checkpoint{Messages: []store.Message{msg(store.RoleUser, "no owner")}}),
		store.ErrStaleOwner)
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if got.Tokens != 12 || got.CostCents != 0.6 || got.Iterations != 1 {
		t.Fatalf("counters after checkpoints: %d %v %d", got.Tokens, got.CostCents, got.Iterations)
	}
	wantErr(t, s.CheckpointRun(ctx(t), r.ID, store.Checkpoint{Owner: "other", Messages: []store.Message{msg(store.RoleUser, "stale")}}),
		store.ErrStaleOwner)
	must(t, s.TransitionRun(ctx(t), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success,
		&store.RunFinish{Tokens: 20, Iterations: 2, Messages: []store.Message{msg(store.RoleAssistant, "answer")}}))
	wantErr(t, s.CheckpointRun(ctx(t), r.ID, store.Checkpoint{Owner: "me", Messages: []store.Message{msg(store.RoleUser, "late")}}),
		store.ErrInvalidTransition)
	msgs, err := s.Messages(ctx(t), r.SessionKey, 0)
	must(t, err)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if diff := cmp.Diff([]string{"task", "call", "result", "answer"}, texts); diff != "" {
		t.Fatalf("conversation (-want +got):\n%s", diff)
	}
}

// testStaleOwnerFenced is a process paused past its lease: another took
// one of its runs over and ended another as interrupted. Every write the
// paused process then makes under its old ID is refused and stores
// nothing (its "success" never overwrites the heir's run), while the
// heir's writes and a later follow-up by anyone go through.
func testStaleOwnerFenced(t *testing.T, s store.Store) {
	mk := func(n int) store.Run {
		r := newRun(shortID(0xe00+n), "ava:cli:p")
		r.Status, r.Owner, r.Role = lifecycle.Running, "paused", "researcher"
		return createRun(t, s, r)
	}
	taken, ended := mk(1), mk(2)
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "paused", Host: "h", PID: 1, StartedAt: time.Now(), HeartbeatAt: time.Now()}))
	tk := store.Takeover{Owner: "heir", MaxAttempts: 3, Resume: func(r store.Run) bool { return r.ID == taken.ID }}
	res, end, err := s.RecoverOwner(ctx(t), "paused", time.Time{}, tk)
	must(t, err)
	if len(res) != 1 || len(end) != 1 {
		t.Fatalf("recover: %d taken over, %d ended", len(res), len(end))
	}
	msg := store.Message{SessionKey: taken.SessionKey, Role: store.RoleAssistant, Sender: taken.ShortID, Text: "stale step"}
	fin := &store.RunFinish{Result: []byte(`{"summary":"stale"}`), Tokens: 999, Messages: []store.Message{msg}}
	wantErr(t, s.TransitionRun(ctx(t), taken.ID, "paused", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, fin), store.ErrStaleOwner)
	wantErr(t, s.CheckpointRun(ctx(t), taken.ID, store.Checkpoint{Owner: "paused", Tokens: 999, Messages: []store.Message{msg}}), store.ErrStaleOwner)
	wantErr(t, s.TransitionRun(ctx(t), ended.ID, "paused", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, fin), store.ErrInvalidTransition)
	for _, r := range []store.Run{taken, ended} {
		got, err := s.GetRun(ctx(t), r.ID)
		must(t, err)
		if got.Tokens == 999 || string(got.Result) == `{"summary":"stale"}` {
			t.Fatalf("a stale write reached %s: %+v", r.ShortID, got)
		}
		msgs, err := s.Messages(ctx(t), r.SessionKey, 0)
		must(t, err)
		if len(msgs) != 0 {
			t.Fatalf("a stale write added messages to %s: %+v", r.ShortID, msgs)
		}
	}
	must(t, s.CheckpointRun(ctx(t), taken.ID, store.Checkpoint{Owner: "heir", Tokens: 5}))
	must(t, s.TransitionRun(ctx(t), taken.ID, "heir", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, &store.RunFinish{Result: []byte(`{}`)}))
	// A follow-up of a finished run is anyone's; the mover becomes its owner.
	must(t, s.TransitionRun(ctx(t), ended.ID, "third", []lifecycle.Status{lifecycle.Interrupted}, lifecycle.Running, nil))
	got, err := s.GetRun(ctx(t), ended.ID)
	must(t, err)
	if got.Owner != "third" {
		t.Fatalf("owner after a follow-up = %q, want third", got.Owner)
	}
	wantErr(t, s.TransitionRun(ctx(t), ended.ID, "paused", lifecycle.Active, lifecycle.Cancelled, nil), store.ErrStaleOwner)
}

// testRecoverOwnerLeaseRenewed is a recovery that judged an owner gone
// (its heartbeat old) while the owner woke up and renewed its lease:
// RecoverOwner with the registration it saw changes nothing, so the
// owner keeps runs it holds a fresh lease on; with the lease as seen it
// recovers them.
func testRecoverOwnerLeaseRenewed(t *testing.T, s store.Store) {
	r := newRun(shortID(0xe10), "ava:cli:p")
	r.Status, r.Owner = lifecycle.Running, "sleeper"
	r = createRun(t, s, r)
	old := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "sleeper", Host: "h", PID: 1, StartedAt: old, HeartbeatAt: old}))
	seen := store.Instance{ID: "sleeper", HeartbeatAt: old}
	must(t, s.Heartbeat(ctx(t), "sleeper", time.Now()))
	tk := store.Takeover{Owner: "heir", MaxAttempts: 3, Resume: func(store.Run) bool { return true }, Seen: &seen}
	res, end, err := s.RecoverOwner(ctx(t), "sleeper", time.Time{}, tk)
	must(t, err)
	if len(res)+len(end) != 0 {
		t.Fatalf("recovered an owner that renewed its lease: %d taken, %d ended", len(res), len(end))
	}
	insts, err := s.Instances(ctx(t))
	must(t, err)
	if !slices.ContainsFunc(insts, func(in store.Instance) bool { return in.ID == "sleeper" }) {
		t.Fatal("the renewed instance was removed")
	}
	// Not registered when judged gone, and registered now: also left alone.
	tk.Seen = &store.Instance{ID: "sleeper"}
	res, end, err = s.RecoverOwner(ctx(t), "sleeper", time.Time{}, tk)
	must(t, err)
	if len(res)+len(end) != 0 {
		t.Fatal("recovered an owner that registered meanwhile")
	}
	cur := insts[slices.IndexFunc(insts, func(in store.Instance) bool { return in.ID == "sleeper" })]
	tk.Seen = &cur
	res, _, err = s.RecoverOwner(ctx(t), "sleeper", time.Time{}, tk)
	must(t, err)
	if len(res) != 1 || res[0].Owner != "heir" {
		t.Fatalf("recovery with the lease as seen: %+v", res)
	}
}

// A run's record holds its figures over all its turns: a follow-up's
// finish replaces them with the new totals (active time included) and
// adds only that turn's spend to the parent session; StartedAt stays the
// first start while TurnStartedAt moves to each turn's start.
func testRunFiguresOverTurns(t *testing.T, s store.Store) {
	const parent = "ava:cli:figures"
	r := newRun("S-0f1f2f", parent)
	start := base.Add(time.Second)
	r.Status, r.StartedAt = lifecycle.Running, &start
	r = createRun(t, s, r)
	if r.TurnStartedAt == nil || !r.TurnStartedAt.Equal(start) || r.Active != 0 {
		t.Fatalf("new run: turn started %v, active %s; want %v and 0", r.TurnStartedAt, r.Active, start)
	}
	first := &store.RunFinish{Tokens: 100, CostCents: 1.5, Iterations: 2, Active: 3 * time.Second, SpendSession: parent,
		Spend: store.Spend{Model: r.Model, Usage: event.Usage{Tokens: 100, CostCents: 1.5}}, EndedAt: start.Add(3 * time.Second)}
	must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, first))
	must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Success}, lifecycle.Running, nil))
	mid, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if !mid.StartedAt.Equal(start) || mid.TurnStartedAt == nil || mid.TurnStartedAt.Equal(start) || mid.Active != 3*time.Second {
		t.Fatalf("follow-up running: started %v, turn started %v, active %s; want the first start kept, the turn's moved, 3s",
			mid.StartedAt, mid.TurnStartedAt, mid.Active)
	}
	second := &store.RunFinish{Tokens: 160, CostCents: 2.25, Iterations: 3, Active: 4500 * time.Millisecond, SpendSession: parent,
		Spend: store.Spend{Model: r.Model, Usage: event.Usage{Tokens: 60, CostCents: 0.75}}}
	must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, second))
	got, err := s.GetRun(ctx(t), r.ID)
	must(t, err)
	if got.Tokens != 160 || got.CostCents != 2.25 || got.Iterations != 3 || got.Active != 4500*time.Millisecond {
		t.Fatalf("after two turns: %d tokens, %v¢, %d iterations, active %s; want 160, 2.25, 3, 4.5s",
			got.Tokens, got.CostCents, got.Iterations, got.Active)
	}
	sp, err := s.SessionSpend(ctx(t), parent)
	must(t, err)
	if sp.Subagents != (event.Usage{Tokens: 160, CostCents: 2.25}) {
		t.Fatalf("session's subagents spend %+v, want the run's figures (160 tokens, 2.25¢)", sp.Subagents)
	}
	wantPlainErr(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Success,
		&store.RunFinish{Active: -time.Second}))
}

package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// fenceCases check that an event append carrying a run's lease
// (event.Fence) is stored only while its owner owns the run and the run
// is active, checked in the append's own write (issue 39).
func fenceCases() []testCase {
	return []testCase{
		{"FencedAppendStaleOwner", testFencedAppendStaleOwner},
		{"FencedAppendMixedBatch", testFencedAppendMixedBatch},
		{"FencedAppendAfterEnd", testFencedAppendAfterEnd},
		{"FencedAppendFollowUp", testFencedAppendFollowUp},
		{"FencedAppendMalformed", testFencedAppendMalformed},
		{"EndEventsWithTransition", testEndEventsWithTransition},
		{"FencedFinding", testFencedFinding},
		{"FencedAnnouncement", testFencedAnnouncement},
	}
}

// fencedRun creates a running run of owner's.
func fencedRun(t *testing.T, s store.Store, n int, owner string) store.Run {
	t.Helper()
	r := newRun(shortID(0xfe00+n), "ava:cli:fence")
	r.Status, r.Owner = lifecycle.Running, owner
	return createRun(t, s, r)
}

// fencedEvents are n events of r's stream from seq on, under owner's
// lease.
func fencedEvents(r store.Run, owner string, seq uint64, n int) []event.Event {
	evs := make([]event.Event, n)
	for i := range evs {
		evs[i] = newEvent(r.SessionKey, seq+uint64(i))
		evs[i].Agent = r.ShortID
		evs[i].Fence = event.Fence{Run: r.ID, Owner: owner}
	}
	return evs
}

// wantStream fails unless r's stream holds exactly seqs 1…n.
func wantStream(t *testing.T, s store.Store, r store.Run, n int) {
	t.Helper()
	evs, err := s.ReadEvents(ctx(t), r.SessionKey, 0, 0)
	must(t, err)
	last, err := s.LastSeq(ctx(t), r.SessionKey)
	must(t, err)
	if len(evs) != n || last != uint64(n) {
		t.Fatalf("%s's stream holds %d events (last #%d), want %d", r.ShortID, len(evs), last, n)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("%s's stream: event %d is #%d", r.ShortID, i, ev.Seq)
		}
	}
}

// wantFenced fails unless err is a fence's refusal for why.
func wantFenced(t *testing.T, err, why error) {
	t.Helper()
	if !errors.Is(err, event.ErrFenced) || !errors.Is(err, why) {
		t.Fatalf("error = %v, want one wrapping %v and %v", err, event.ErrFenced, why)
	}
}

// testFencedAppendStaleOwner is a process paused past its lease whose
// run another process took over: the events it had queued are refused
// and store nothing, while the new owner's go on from the same number.
func testFencedAppendStaleOwner(t *testing.T, s store.Store) {
	r := fencedRun(t, s, 1, "paused")
	must(t, s.AppendEvents(ctx(t), fencedEvents(r, "paused", 1, 2)))
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "paused", Host: "h", PID: 1, StartedAt: time.Now(), HeartbeatAt: time.Now()}))
	resumed, _, err := s.RecoverOwner(ctx(t), "paused", time.Time{},
		store.Takeover{Owner: "heir", MaxAttempts: 3, Resume: func(store.Run) bool { return true }})
	must(t, err)
	if len(resumed) != 1 {
		t.Fatalf("taken over: %d runs, want 1", len(resumed))
	}
	wantFenced(t, s.AppendEvents(ctx(t), fencedEvents(r, "paused", 3, 3)), store.ErrStaleOwner)
	wantStream(t, s, r, 2)
	must(t, s.AppendEvents(ctx(t), fencedEvents(r, "heir", 3, 1)))
	wantStream(t, s, r, 3)
	// A run that does not exist fences everything.
	ghost := newRun(shortID(0xfeff), "ava:cli:fence")
	wantFenced(t, s.AppendEvents(ctx(t), fencedEvents(ghost, "heir", 1, 1)), store.ErrNotFound)
	wantStream(t, s, ghost, 0)
}

// testFencedAppendMixedBatch appends the events of stale and live runs
// all at once, as a store commits many runs' appends together: each
// stale run's append is refused alone, storing nothing, and every live
// one is stored.
func testFencedAppendMixedBatch(t *testing.T, s store.Store) {
	const n = 12
	var live, stale []store.Run
	for i := range n {
		live = append(live, fencedRun(t, s, 0x10+i, "alive"))
		r := fencedRun(t, s, 0x40+i, "paused")
		// Taken over by another owner: "paused" holds no lease on it.
		must(t, s.TransitionRun(ctx(t), r.ID, "paused", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, nil))
		must(t, s.TransitionRun(ctx(t), r.ID, "heir", []lifecycle.Status{lifecycle.Success}, lifecycle.Running, nil))
		stale = append(stale, r)
	}
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[2*i] = s.AppendEvents(ctx(t), fencedEvents(live[i], "alive", 1, 4))
		})
		wg.Go(func() {
			<-start
			errs[2*i+1] = s.AppendEvents(ctx(t), fencedEvents(stale[i], "paused", 1, 4))
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		must(t, errs[2*i])
		wantStream(t, s, live[i], 4)
		wantFenced(t, errs[2*i+1], store.ErrStaleOwner)
		wantStream(t, s, stale[i], 0)
	}
}

// testFencedAppendAfterEnd ends a run: its owner's later events are
// refused (its stream ends with its end), whoever ended it.
func testFencedAppendAfterEnd(t *testing.T, s store.Store) {
	mine := fencedRun(t, s, 1, "me")
	must(t, s.AppendEvents(ctx(t), fencedEvents(mine, "me", 1, 1)))
	must(t, s.TransitionRun(ctx(t), mine.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, &store.RunFinish{Result: []byte(`{}`)}))
	wantFenced(t, s.AppendEvents(ctx(t), fencedEvents(mine, "me", 2, 2)), store.ErrInvalidTransition)
	wantStream(t, s, mine, 1)

	// Ended by recovery while its owner was cut off: the owner keeps its
	// ID, but the run has ended.
	cut := fencedRun(t, s, 2, "cut")
	must(t, s.RegisterInstance(ctx(t), store.Instance{ID: "cut", Host: "h", PID: 1, StartedAt: time.Now(), HeartbeatAt: time.Now()}))
	ended, err := s.InterruptOwner(ctx(t), "cut", time.Time{})
	must(t, err)
	if len(ended) != 1 {
		t.Fatalf("interrupted %d runs, want 1", len(ended))
	}
	wantFenced(t, s.AppendEvents(ctx(t), fencedEvents(cut, "cut", 1, 1)), store.ErrInvalidTransition)
	wantStream(t, s, cut, 0)
	// An event without a lease (recovery's own end events) is stored.
	must(t, s.AppendEvents(ctx(t), []event.Event{newEvent(cut.SessionKey, 1)}))
	wantStream(t, s, cut, 1)
}

// testFencedAppendFollowUp sends a follow-up to a finished run from
// another process: the run is active again under its new owner, whose
// events are stored, and the old owner's are not.
func testFencedAppendFollowUp(t *testing.T, s store.Store) {
	r := fencedRun(t, s, 1, "first")
	must(t, s.AppendEvents(ctx(t), fencedEvents(r, "first", 1, 1)))
	must(t, s.TransitionRun(ctx(t), r.ID, "first", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, &store.RunFinish{Result: []byte(`{}`)}))
	must(t, s.TransitionRun(ctx(t), r.ID, "second", []lifecycle.Status{lifecycle.Success}, lifecycle.Running, nil))
	wantFenced(t, s.AppendEvents(ctx(t), fencedEvents(r, "first", 2, 1)), store.ErrStaleOwner)
	must(t, s.AppendEvents(ctx(t), fencedEvents(r, "second", 2, 1)))
	wantStream(t, s, r, 2)
	// A queued run is active: its owner's events are stored.
	q := newRun(shortID(0xfe70), "ava:cli:fence")
	q.Status, q.Owner = lifecycle.Queued, "queuer"
	q = createRun(t, s, q)
	must(t, s.AppendEvents(ctx(t), fencedEvents(q, "queuer", 1, 1)))
	wantStream(t, s, q, 1)
}

// testFencedAppendMalformed refuses an append whose events carry two
// fences: it stores nothing and is no fence's refusal.
func testFencedAppendMalformed(t *testing.T, s store.Store) {
	r := fencedRun(t, s, 1, "me")
	evs := fencedEvents(r, "me", 1, 2)
	evs[1].Fence.Owner = "other"
	err := s.AppendEvents(ctx(t), evs)
	if err == nil || errors.Is(err, event.ErrFenced) {
		t.Fatalf("two fences in one append: error = %v, want a validation error", err)
	}
	wantStream(t, s, r, 0)
}

// testEndEventsWithTransition records a run's end with its last events
// (RunFinish.Events) in one write: stored together, numbered on from the
// stream; a refused end stores none of them; a number taken is
// ErrSeqTaken and stores nothing either.
func testEndEventsWithTransition(t *testing.T, s store.Store) {
	r := fencedRun(t, s, 1, "me")
	must(t, s.AppendEvents(ctx(t), fencedEvents(r, "me", 1, 2)))
	end := func(owner string, seq uint64) *store.RunFinish {
		ev := newEvent(r.SessionKey, seq)
		ev.Type = event.SessionEnd
		return &store.RunFinish{Result: []byte(`{}`), Events: []event.Event{newEvent(r.SessionKey, seq-1), ev}}
	}
	// A number taken: nothing of the end is stored, the run still runs.
	err := s.TransitionRun(ctx(t), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, end("me", 3))
	if !errors.Is(err, event.ErrSeqTaken) {
		t.Fatalf("end with a taken number: error = %v, want ErrSeqTaken", err)
	}
	if got, _ := s.GetRun(ctx(t), r.ID); got.Status != lifecycle.Running {
		t.Fatalf("after a refused end the run is %s", got.Status)
	}
	wantStream(t, s, r, 2)
	// Another owner's end: refused, nothing stored.
	wantErr(t, s.TransitionRun(ctx(t), r.ID, "other", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, end("other", 4)), store.ErrStaleOwner)
	wantStream(t, s, r, 2)
	// The owner's: the end and its events together.
	must(t, s.TransitionRun(ctx(t), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, end("me", 4)))
	wantStream(t, s, r, 4)
	evs, err := s.ReadEvents(ctx(t), r.SessionKey, 3, 0)
	must(t, err)
	if evs[0].Type != event.SessionEnd {
		t.Fatalf("the last event is %s, want SessionEnd", evs[0].Type)
	}
	// A second end is refused, and its events with it.
	wantErr(t, s.TransitionRun(ctx(t), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Error, end("me", 6)), store.ErrInvalidTransition)
	wantStream(t, s, r, 4)
}

// testFencedFinding posts findings under a run's lease: stored while the
// poster owns the active run, refused (nothing stored) once another
// process took it over or it ended.
func testFencedFinding(t *testing.T, s store.Store) {
	r := newRun(shortID(0xfe90), "ava:cli:fence")
	r.Status, r.Owner, r.GroupID = lifecycle.Running, "me", "G-fence"
	r = createRun(t, s, r)
	post := func(owner, text string) error {
		_, err := s.PostFinding(ctx(t), store.Finding{GroupID: r.GroupID, RunID: r.ID, ShortID: r.ShortID, Role: r.Role,
			Text: text, Owner: owner})
		return err
	}
	must(t, post("me", "first"))
	wantFenced(t, post("other", "stale"), store.ErrStaleOwner)
	must(t, s.TransitionRun(ctx(t), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, nil))
	wantFenced(t, post("me", "after the end"), store.ErrInvalidTransition)
	fs, err := s.Findings(ctx(t), r.GroupID, 0, "")
	must(t, err)
	if len(fs) != 1 || fs[0].Text != "first" {
		t.Fatalf("findings %+v, want only the first", fs)
	}
}

// testFencedAnnouncement announces a run's result under the lease of the
// end it was written for: after a follow-up by another process ended the
// run again, the first turn's announcer is refused and stores nothing,
// and the run's owner announces.
func testFencedAnnouncement(t *testing.T, s store.Store) {
	r := newRun(shortID(0xfea0), "ava:cli:fence-announce")
	r.Status, r.Owner = lifecycle.Running, "first"
	r = createRun(t, s, r)
	must(t, s.TransitionRun(ctx(t), r.ID, "first", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, &store.RunFinish{Result: []byte(`{}`)}))
	must(t, s.TransitionRun(ctx(t), r.ID, "second", []lifecycle.Status{lifecycle.Success}, lifecycle.Running, nil))
	must(t, s.TransitionRun(ctx(t), r.ID, "second", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, &store.RunFinish{Result: []byte(`{}`)}))
	_, err := s.AnnounceResult(ctx(t), r.ID, "first", store.Message{Text: "[Task: find] the first turn's"})
	wantErr(t, err, store.ErrStaleOwner)
	ok, err := s.AnnounceResult(ctx(t), r.ID, "second", store.Message{Text: "[Task: find] the second turn's"})
	must(t, err)
	if !ok {
		t.Fatal("the owner's announcement was not stored")
	}
	msgs, err := s.Messages(ctx(t), r.ParentSession, 0)
	must(t, err)
	if len(msgs) != 1 || msgs[0].Text != "[Task: find] the second turn's" {
		t.Fatalf("parent's messages %+v, want only the owner's announcement", msgs)
	}
}

package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
)

// runOutbox names one webhook delivery (hook h-3) for every event, of
// the run the event's Agent names ("" for "ava": a session's own), and
// one command delivery (hook h-4) on the host the event's User names
// for each SubagentSpawn.
func runOutbox(ev event.Event) []store.HookDelivery {
	run := ev.Agent
	if run == "ava" {
		run = ""
	}
	out := []store.HookDelivery{{HookID: "h-3", Kind: "url", Event: string(ev.Type), Run: run, Body: `{}`, MaxAttempts: 3}}
	if ev.Type == event.SubagentSpawn {
		out = append(out, store.HookDelivery{HookID: "h-4", Kind: "command", Event: string(ev.Type), Run: run, Host: ev.User,
			Body: `{}`, MaxAttempts: 3})
	}
	return out
}

// appendRun stores an event of typ numbered seq in session, of run
// (its Agent), recorded on host (its User).
func appendRun(t *testing.T, s store.Store, session string, seq uint64, typ event.Type, run, host string) {
	t.Helper()
	ev := event.New(typ, map[string]string{"x": "y"})
	ev.Session, ev.Agent, ev.User, ev.Seq, ev.Time = session, run, host, seq, time.Now()
	must(t, s.AppendEvents(ctx(t), []event.Event{ev}))
}

// Delivery IDs are UUIDv7s drawn by the store, unique for good: two
// fresh stores (a database moved aside and started afresh, a new
// PostgreSQL database) record the same events under row numbers that
// start again at 1, and under IDs that share nothing. A delivery is
// found by its ID or a prefix of it.
func testHookDeliveryIDsUnique(t *testing.T, open func(store.Outbox) store.Store) {
	seen := map[string]string{}
	for _, name := range []string{"first", "replacement"} {
		s := open(hookOutbox)
		for i := range 10 {
			must(t, appendTyped(t, s, "ava:cli:u", uint64(i+1), event.SubagentComplete))
		}
		ds, err := s.HookDeliveries(ctx(t), store.HookFilter{})
		must(t, err)
		if len(ds) != 10 {
			t.Fatalf("%s store: %d deliveries, want 10", name, len(ds))
		}
		for _, d := range ds {
			u, err := uuid.Parse(d.ID)
			if err != nil || u.Version() != 7 || u.String() != d.ID {
				t.Fatalf("%s store: delivery %d has ID %q, want a lower-case UUIDv7 (%v)", name, d.Row, d.ID, err)
			}
			if at := time.Unix(u.Time().UnixTime()); time.Since(at) > time.Minute || time.Until(at) > time.Minute {
				t.Errorf("%s store: delivery %s's time part is %s", name, d.ID, at)
			}
			if prev, dup := seen[d.ID]; dup {
				t.Fatalf("delivery ID %s given twice: in the %s store and the %s one", d.ID, prev, name)
			}
			seen[d.ID] = name
			for _, prefix := range []string{d.ID, d.ID[:30]} {
				got, err := s.HookDeliveries(ctx(t), store.HookFilter{ID: prefix})
				must(t, err)
				if len(got) != 1 || got[0].Row != d.Row {
					t.Fatalf("%s store: deliveries found by %q: %+v, want row %d only", name, prefix, got, d.Row)
				}
			}
		}
		if rows := []int64{ds[len(ds)-1].Row, ds[0].Row}; rows[0] != 1 || rows[1] != 10 {
			t.Errorf("%s store: rows %d to %d, want 1 to 10 (each database counts its own)", name, rows[0], rows[1])
		}
		none, err := s.HookDeliveries(ctx(t), store.HookFilter{ID: "ffffffff-"})
		must(t, err)
		if len(none) != 0 {
			t.Fatalf("%s store: a prefix no ID has found %d", name, len(none))
		}
	}
}

// A claim is held while its owner is a registered instance: once the
// owner is removed (recovery found it gone), another process claims
// its deliveries at once, long before the lease's end, and the gone
// owner can record nothing for them.
func testHookGoneOwnerReleased(t *testing.T, open func(store.Outbox) store.Store) {
	s := open(hookOutbox)
	for i := range 3 {
		must(t, appendTyped(t, s, "ava:cli:g", uint64(i+1), event.SubagentComplete))
	}
	register(t, s, "dead", "live")
	claim := func(owner string) []store.HookDelivery {
		t.Helper()
		ds, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: owner, Hooks: []string{"h-1"}, Lease: time.Hour, Limit: 10})
		must(t, err)
		return ds
	}
	held := claim("dead")
	if len(held) != 3 {
		t.Fatalf("claimed %d, want 3", len(held))
	}
	if ds := claim("live"); len(ds) != 0 {
		t.Fatalf("a registered owner's live claim was taken: %+v", ds)
	}
	// Recovery judged it gone as it was registered, and removes it.
	instances, err := s.Instances(ctx(t))
	must(t, err)
	i := slices.IndexFunc(instances, func(in store.Instance) bool { return in.ID == "dead" })
	if i < 0 {
		t.Fatalf("instances %+v", instances)
	}
	resumed, ended, err := s.RecoverOwner(ctx(t), "dead", time.Now(), store.Takeover{Seen: &instances[i]})
	must(t, err)
	if len(resumed)+len(ended) != 0 {
		t.Fatalf("recovery of an owner without runs changed runs: %+v %+v", resumed, ended)
	}
	got := claim("live")
	if len(got) != 3 {
		t.Fatalf("after its owner was removed, %d of 3 claimed deliveries were claimed again", len(got))
	}
	for _, d := range got {
		if d.LeaseOwner != "live" || !d.LeaseUntil.After(time.Now().Add(50*time.Minute)) {
			t.Fatalf("reclaimed %+v", d)
		}
	}
	wantErr(t, s.FinishHookDelivery(ctx(t), held[0].Row, store.HookAttempt{Owner: "dead", Status: store.HookDelivered}), store.ErrStaleOwner)
	must(t, s.FinishHookDelivery(ctx(t), got[0].Row, store.HookAttempt{Owner: "live", Status: store.HookDelivered}))
	// An owner that never registered holds nothing either.
	must(t, appendTyped(t, s, "ava:cli:g", 4, event.SubagentComplete))
	if ds := claim("unregistered"); len(ds) != 1 || ds[0].Seq != 4 {
		t.Fatalf("an unregistered owner claimed %+v, want the new delivery (live holds the others)", ds)
	}
	if ds := claim("live"); len(ds) != 1 || ds[0].Seq != 4 {
		t.Fatalf("a claim of an unregistered owner was kept from another: %+v", ds)
	}
}

// One hook's deliveries of one run are claimed in order, one at a
// time: a delivery waits while an earlier one of its hook, run and host
// is pending or failed, claimed or not; a delivered or dead one lets
// the next go. Other runs, a session's own events and another host's
// command deliveries do not wait for it.
func testHookRunOrder(t *testing.T, open func(store.Outbox) store.Store) {
	s := open(runOutbox)
	register(t, s, "p1", "p2")
	const sess = "ava:cli:o"
	appendRun(t, s, sess, 1, event.SubagentSpawn, "S-a", "here")
	appendRun(t, s, sess, 2, event.SubagentSpawn, "S-b", "here")
	appendRun(t, s, sess, 3, event.SubagentComplete, "S-a", "here")
	appendRun(t, s, sess, 4, event.SubagentComplete, "S-b", "here")
	appendRun(t, s, sess, 5, event.SessionState, "ava", "here")
	appendRun(t, s, sess, 6, event.SessionState, "ava", "here")
	appendRun(t, s, sess, 7, event.SubagentSpawn, "S-a", "there") // a follow-up recorded on another host
	claim := func(owner string, hooks ...string) map[string]store.HookDelivery {
		t.Helper()
		ds, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: owner, Host: "here", Hooks: hooks, Lease: time.Hour, Limit: 20})
		must(t, err)
		out := map[string]store.HookDelivery{}
		for _, d := range ds {
			out[fmt.Sprint(d.Seq)+"/"+d.HookID] = d
		}
		return out
	}
	keys := func(m map[string]store.HookDelivery) string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, " ")
	}
	got := claim("p1", "h-3")
	if k := keys(got); k != "1/h-3 2/h-3 5/h-3 6/h-3" {
		t.Fatalf("first claim %s, want each run's first delivery and the session's own", k)
	}
	if k := keys(claim("p2", "h-3")); k != "" {
		t.Fatalf("while each run's first is claimed, another process claimed %s", k)
	}
	finish := func(d store.HookDelivery, status string, next time.Time) {
		t.Helper()
		must(t, s.FinishHookDelivery(ctx(t), d.Row, store.HookAttempt{Owner: d.LeaseOwner, Status: status, NextAt: next}))
	}
	finish(got["1/h-3"], store.HookDelivered, time.Now())
	finish(got["2/h-3"], store.HookFailed, time.Now().Add(time.Hour))
	if k := keys(claim("p2", "h-3")); k != "3/h-3" {
		t.Fatalf("after S-a's start was delivered and S-b's failed, claimed %s, want S-a's complete only", k)
	}
	failed := rowOf(t, s, 2, "h-3")
	_, err := s.RetryHookDeliveries(ctx(t), []int64{failed.Row}, nil)
	must(t, err)
	again := claim("p2", "h-3")
	if k := keys(again); k != "2/h-3" {
		t.Fatalf("after S-b's start was retried, claimed %s, want it alone (S-b's complete waits for it)", k)
	}
	finish(again["2/h-3"], store.HookDead, time.Now())
	if k := keys(claim("p2", "h-3")); k != "4/h-3" {
		t.Fatalf("after S-b's start went dead, claimed %s, want S-b's complete", k)
	}

	// Command deliveries wait for their own host's: S-a's start on
	// "there" does not wait for the one on "here", still pending.
	ds, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: "p1", Host: "there", Hooks: []string{"h-4"}, Lease: time.Hour})
	must(t, err)
	if len(ds) != 1 || ds[0].Seq != 7 || ds[0].Run != "S-a" {
		t.Fatalf("claim on host there: %+v, want S-a's follow-up start", ds)
	}
	ds, err = s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: "p1", Host: "here", Hooks: []string{"h-4"}, Lease: time.Hour})
	must(t, err)
	if len(ds) != 2 || ds[0].Run == ds[1].Run {
		t.Fatalf("claim on host here: %+v, want the starts of S-a and S-b", ds)
	}
}

// rowOf is the delivery of the event numbered seq to hook.
func rowOf(t *testing.T, s store.Store, seq uint64, hook string) store.HookDelivery {
	t.Helper()
	ds, err := s.HookDeliveries(ctx(t), store.HookFilter{Limit: 1000})
	must(t, err)
	for _, d := range ds {
		if d.Seq == seq && d.HookID == hook {
			return d
		}
	}
	t.Fatalf("no delivery of #%d to %s", seq, hook)
	return store.HookDelivery{}
}

// Processes claiming and delivering at once keep each run's order: no
// two deliveries of a run are held at once, and each run's are
// delivered in the order they were recorded.
func testHookRunOrderConcurrent(t *testing.T, open func(store.Outbox) store.Store) {
	const runs, perRun, workers = 12, 4, 6
	s := open(runOutbox)
	seq := uint64(0)
	for i := range perRun {
		for r := range runs {
			seq++
			typ := event.SubagentProgress
			if i == 0 {
				typ = event.SubagentResumed
			}
			appendRun(t, s, "ava:cli:oc", seq, typ, fmt.Sprintf("S-%02d", r), "here")
		}
	}
	owners := make([]string, workers)
	for w := range owners {
		owners[w] = fmt.Sprintf("w%d", w)
	}
	register(t, s, owners...)
	all, err := s.HookDeliveries(ctx(t), store.HookFilter{Limit: runs * perRun})
	must(t, err)
	order := map[string][]int64{} // each run's rows, in the order recorded
	for _, d := range slices.Backward(all) {
		order[d.Run] = append(order[d.Run], d.Row)
	}
	var (
		// mu is held across a FinishHookDelivery and the note of it, so
		// a claim that the finish made possible is checked after the note.
		mu        sync.Mutex
		finished  = map[int64]bool{}
		delivered = map[string][]int64{}
	)
	var wg sync.WaitGroup
	for _, owner := range owners {
		wg.Go(func() {
			for idle := 0; idle < 200; {
				ds, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: owner, Hooks: []string{"h-3"}, Lease: time.Minute, Limit: 3})
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					mu.Lock()
					done := len(finished) == runs*perRun
					mu.Unlock()
					if done {
						return
					}
					idle++
					time.Sleep(2 * time.Millisecond)
					continue
				}
				mu.Lock()
				for _, d := range ds {
					for _, earlier := range order[d.Run] {
						if earlier < d.Row && !finished[earlier] {
							t.Errorf("run %s: delivery %d claimed before %d was delivered", d.Run, d.Row, earlier)
						}
					}
				}
				mu.Unlock()
				for _, d := range ds {
					mu.Lock()
					if err := s.FinishHookDelivery(ctx(t), d.Row, store.HookAttempt{Owner: owner, Status: store.HookDelivered}); err != nil {
						t.Error(err)
					}
					finished[d.Row] = true
					delivered[d.Run] = append(delivered[d.Run], d.Row)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(finished) != runs*perRun {
		t.Fatalf("delivered %d of %d", len(finished), runs*perRun)
	}
	for run, rows := range delivered {
		if !slices.Equal(rows, order[run]) {
			t.Errorf("run %s delivered as rows %v, want %v", run, rows, order[run])
		}
	}
}

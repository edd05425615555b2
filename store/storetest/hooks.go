package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
)

// RunHooks runs the hook delivery tests: open must return a fresh store
// whose AppendEvents records the deliveries outbox names (its Outbox
// option), and close it when t ends.
func RunHooks(t *testing.T, open func(t *testing.T, outbox store.Outbox) store.Store) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, open func(store.Outbox) store.Store)
	}{
		{"HookOutboxWithEvents", testHookOutbox},
		{"HookClaimOnce", testHookClaimOnce},
		{"HookAttempts", testHookAttempts},
		{"HookCommandHost", testHookCommandHost},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, func(o store.Outbox) store.Store { return open(t, o) })
		})
	}
}

// hookOutbox names one webhook delivery (hook h-1) for each
// SubagentComplete event, and a command delivery on host "here" (hook
// h-2) for each SessionState.
func hookOutbox(ev event.Event) []store.HookDelivery {
	switch ev.Type {
	case event.SubagentComplete:
		return []store.HookDelivery{{HookID: "h-1", Kind: "url", Event: "subagent:complete",
			Body: `{"eventType":"subagent:complete","secret":"sk-ant-api03-` + fmt.Sprint(ev.Seq) + `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, MaxAttempts: 3}}
	case event.SessionState:
		return []store.HookDelivery{{HookID: "h-2", Kind: "command", Event: "session:idle",
			Body: `{}`, Host: "here", MaxAttempts: 1}}
	}
	return nil
}

func appendTyped(t *testing.T, s store.Store, session string, seq uint64, typ event.Type) error {
	t.Helper()
	ev := event.New(typ, map[string]string{"x": "y"})
	ev.Session, ev.Agent, ev.Seq, ev.Time = session, "ava", seq, time.Now()
	return s.AppendEvents(ctx(t), []event.Event{ev})
}

// Deliveries are recorded with their events, once per event and hook,
// and not for an event whose number was taken (the write is one).
func testHookOutbox(t *testing.T, open func(store.Outbox) store.Store) {
	s := open(hookOutbox)
	must(t, appendTyped(t, s, "ava:cli:h", 1, event.SubagentComplete))
	must(t, appendTyped(t, s, "ava:cli:h", 2, event.UserMessage))
	wantErr(t, appendTyped(t, s, "ava:cli:h", 1, event.SubagentComplete), event.ErrSeqTaken)
	ds, err := s.HookDeliveries(ctx(t), store.HookFilter{})
	must(t, err)
	if len(ds) != 1 {
		t.Fatalf("deliveries %+v, want one", ds)
	}
	d := ds[0]
	if d.HookID != "h-1" || d.SessionKey != "ava:cli:h" || d.Seq != 1 || d.Status != store.HookPending || d.Attempts != 0 || d.MaxAttempts != 3 {
		t.Fatalf("delivery %+v", d)
	}
	var body map[string]string
	must(t, json.Unmarshal([]byte(d.Body), &body))
	if body["eventType"] != "subagent:complete" {
		t.Fatalf("body %s", d.Body)
	}
	n, err := s.CountHookDeliveries(ctx(t))
	must(t, err)
	if n[store.HookPending] != 1 {
		t.Fatalf("counts %v", n)
	}
}

// Of many processes claiming at once, each delivery goes to one; a
// claimed delivery is not claimed again while its lease lives.
func testHookClaimOnce(t *testing.T, open func(store.Outbox) store.Store) {
	s := open(hookOutbox)
	for i := range 20 {
		must(t, appendTyped(t, s, "ava:cli:c", uint64(i+1), event.SubagentComplete))
	}
	var mu sync.Mutex
	got := map[int64]string{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			owner := fmt.Sprintf("p%d", w)
			for range 5 {
				ds, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: owner, Hooks: []string{"h-1"}, Lease: time.Minute, Limit: 3})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, d := range ds {
					if prev, dup := got[d.ID]; dup {
						t.Errorf("delivery %d claimed by %s and %s", d.ID, prev, owner)
					}
					got[d.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != 20 {
		t.Fatalf("claimed %d of 20", len(got))
	}
	ds, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: "late", Hooks: []string{"h-1"}, Lease: time.Minute})
	must(t, err)
	if len(ds) != 0 {
		t.Fatalf("claimed %d leased deliveries again", len(ds))
	}
	none, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: "other", Hooks: []string{"h-9"}, Lease: -time.Second})
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("a process without the hook claimed %d", len(none))
	}
}

// An attempt is recorded only by the lease's holder; a failure waits for
// its next time, a dead delivery waits for a retry, which resets it.
func testHookAttempts(t *testing.T, open func(store.Outbox) store.Store) {
	s := open(hookOutbox)
	must(t, appendTyped(t, s, "ava:cli:a", 1, event.SubagentComplete))
	claim := store.HookClaim{Owner: "p1", Hooks: []string{"h-1"}, Lease: time.Minute}
	ds, err := s.ClaimHookDeliveries(ctx(t), claim)
	must(t, err)
	if len(ds) != 1 || ds[0].LeaseOwner != "p1" {
		t.Fatalf("claim %+v", ds)
	}
	id := ds[0].ID
	wantErr(t, s.FinishHookDelivery(ctx(t), id, store.HookAttempt{Owner: "p2", Status: store.HookDelivered}), store.ErrStaleOwner)
	must(t, s.FinishHookDelivery(ctx(t), id, store.HookAttempt{Owner: "p1", Status: store.HookFailed,
		NextAt: time.Now().Add(time.Hour), Error: "502 Bad Gateway"}))
	if ds, _ = s.ClaimHookDeliveries(ctx(t), claim); len(ds) != 0 {
		t.Fatal("a failed delivery was claimed before its next time")
	}
	got := one(t, s, id)
	if got.Status != store.HookFailed || got.Attempts != 1 || got.LastError != "502 Bad Gateway" || got.LeaseOwner != "" {
		t.Fatalf("after a failure %+v", got)
	}
	retried, err := s.RetryHookDeliveries(ctx(t), []int64{id}, nil)
	must(t, err)
	if !slices.Equal(retried, []int64{id}) {
		t.Fatalf("retried %v", retried)
	}
	ds, err = s.ClaimHookDeliveries(ctx(t), claim)
	must(t, err)
	if len(ds) != 1 || ds[0].Attempts != 0 {
		t.Fatalf("after retry claim %+v", ds)
	}
	must(t, s.FinishHookDelivery(ctx(t), id, store.HookAttempt{Owner: "p1", Status: store.HookDead, Error: "gone"}))
	if got = one(t, s, id); got.Status != store.HookDead {
		t.Fatalf("dead %+v", got)
	}
	retried, err = s.RetryHookDeliveries(ctx(t), nil, []string{store.HookDead})
	must(t, err)
	if len(retried) != 1 {
		t.Fatalf("retry of dead %v", retried)
	}
	ds, err = s.ClaimHookDeliveries(ctx(t), claim)
	must(t, err)
	if len(ds) != 1 {
		t.Fatal("retried dead delivery not claimable")
	}
	must(t, s.FinishHookDelivery(ctx(t), id, store.HookAttempt{Owner: "p1", Status: store.HookDelivered}))
	got = one(t, s, id)
	if got.Status != store.HookDelivered || got.DeliveredAt == nil {
		t.Fatalf("delivered %+v", got)
	}
	if retried, _ = s.RetryHookDeliveries(ctx(t), []int64{id}, nil); len(retried) != 0 {
		t.Fatal("a delivered delivery was sent back")
	}
}

// A command delivery goes only to a process on its host.
func testHookCommandHost(t *testing.T, open func(store.Outbox) store.Store) {
	s := open(hookOutbox)
	must(t, appendTyped(t, s, "ava:cli:h", 1, event.SessionState))
	ds, err := s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: "p1", Host: "elsewhere", Hooks: []string{"h-2"}, Lease: time.Minute})
	must(t, err)
	if len(ds) != 0 {
		t.Fatal("a command delivery was claimed on another host")
	}
	ds, err = s.ClaimHookDeliveries(ctx(t), store.HookClaim{Owner: "p1", Host: "here", Hooks: []string{"h-2"}, Lease: time.Minute})
	must(t, err)
	if len(ds) != 1 || ds[0].Kind != "command" {
		t.Fatalf("claim on its host %+v", ds)
	}
}

func one(t *testing.T, s store.Store, id int64) store.HookDelivery {
	t.Helper()
	ds, err := s.HookDeliveries(ctx(t), store.HookFilter{IDs: []int64{id}})
	must(t, err)
	if len(ds) != 1 {
		t.Fatalf("delivery %d: %d found", id, len(ds))
	}
	return ds[0]
}

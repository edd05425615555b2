package subagent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// meetingStore holds each CreateRun until want of them are under way at
// once (or a second has passed), and records the most seen at once; a
// run whose task is fail is refused.
type meetingStore struct {
	store.Store
	want int
	fail string

	mu      sync.Mutex
	cond    *sync.Cond
	inside  int
	most    int
	arrived int
}

func newMeetingStore(s store.Store, want int, fail string) *meetingStore {
	m := &meetingStore{Store: s, want: want, fail: fail}
	m.cond = sync.NewCond(&m.mu)
	return m
}

func (m *meetingStore) CreateRun(ctx context.Context, r store.Run) error {
	m.mu.Lock()
	m.inside++
	m.arrived++
	m.most = max(m.most, m.inside)
	m.cond.Broadcast()
	late := false
	timer := time.AfterFunc(time.Second, func() {
		m.mu.Lock()
		late = true
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	for m.arrived < m.want && !late {
		m.cond.Wait()
	}
	timer.Stop()
	m.inside--
	m.mu.Unlock()
	if m.fail != "" && r.Task == m.fail {
		return fmt.Errorf("create run %s: %w", r.ShortID, store.ErrDiskFull)
	}
	return m.Store.CreateRun(ctx, r)
}

func (m *meetingStore) mostAtOnce() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.most
}

// TestParallelGroupRecordsItsMembersAtOnce: a parallel group's members
// that have a slot have their run records written at once (so SQLite's
// group commit puts them in one transaction), not one commit after
// another, and every record is committed before SpawnGroup returns.
func TestParallelGroupRecordsItsMembersAtOnce(t *testing.T) {
	var ms *meetingStore
	h := newHarness(t, answerScript, func(o *subagent.Options) {
		ms = newMeetingStore(o.Store, 3, "")
		o.Store = ms
	})
	cfgs := []subagent.Config{{Role: "researcher", Task: "a"}, {Role: "researcher", Task: "b"}, {Role: "researcher", Task: "c"}}
	g, err := h.m.SpawnGroup(context.Background(), subagent.GroupRequest{Mode: subagent.ModeParallel, Parent: parent, Configs: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	for _, hd := range g.Handles() {
		if _, err := h.store.GetRun(context.Background(), hd.ID()); err != nil {
			t.Errorf("member %s has no record when SpawnGroup returned: %v", hd.ID(), err)
		}
	}
	if n := ms.mostAtOnce(); n != 3 {
		t.Errorf("at most %d of the 3 members' records were written at once, want 3", n)
	}
	rs, err := g.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Status != lifecycle.Success {
			t.Errorf("member %d: %s %s", i+1, r.Status, r.Error)
		}
	}
}

// TestParallelGroupWhoseMemberIsNotRecorded: when one member's record
// cannot be written, SpawnGroup fails with ErrNotRecorded, that member
// never runs, and the members recorded with it end (no record is left
// active).
func TestParallelGroupWhoseMemberIsNotRecorded(t *testing.T) {
	h := newHarness(t, answerScript, func(o *subagent.Options) {
		o.Store = newMeetingStore(o.Store, 3, "b")
	})
	cfgs := []subagent.Config{{Role: "researcher", Task: "a"}, {Role: "researcher", Task: "b"}, {Role: "researcher", Task: "c"}}
	_, err := h.m.SpawnGroup(context.Background(), subagent.GroupRequest{Mode: subagent.ModeParallel, Parent: parent, Configs: cfgs})
	if !errors.Is(err, subagent.ErrNotRecorded) {
		t.Fatalf("SpawnGroup: %v, want ErrNotRecorded", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		all, err := h.store.ListRuns(context.Background(), store.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		active := 0
		for _, r := range all {
			if r.Task == "b" {
				t.Fatalf("the refused member has a record: %+v", r)
			}
			if !r.Status.Final() {
				active++
			}
		}
		if active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records still active: %+v", active, all)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The store records a member's end before its handle shows it (the
	// write comes first, then the handle): wait for the handles too.
	for _, hd := range h.m.List(true) {
		for st := hd.Status().Status; !st.Final(); st = hd.Status().Status {
			if time.Now().After(deadline) {
				t.Fatalf("member %s is still %s", hd.ID(), st)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

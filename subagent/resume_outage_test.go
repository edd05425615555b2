package subagent_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// downStore is a store whose reads of a conversation or a session fail
// as those of a database that is restarting do, while down is set.
type downStore struct {
	store.Store
	down  atomic.Bool
	fails atomic.Int32
}

func (d *downStore) refuse() error {
	if d.down.Load() {
		d.fails.Add(1)
		return fmt.Errorf("read: failed to connect to `host=/tmp/pgtest user=ava`: dial error: connection refused")
	}
	return nil
}

func (d *downStore) Messages(ctx context.Context, key string, limit int) ([]store.Message, error) {
	if err := d.refuse(); err != nil {
		return nil, err
	}
	return d.Store.Messages(ctx, key, limit)
}

func (d *downStore) GetSession(ctx context.Context, key string) (store.Session, error) {
	if err := d.refuse(); err != nil {
		return store.Session{}, err
	}
	return d.Store.GetSession(ctx, key)
}

// A run taken over while the store cannot be read waits for it and
// goes on, rather than ending interrupted with "could not be resumed:
// load conversation: …" (issue 25, item 2).
func TestResumeRidesOutAStoreOutage(t *testing.T) {
	ds := &downStore{}
	h := newHarness(t, "turns:\n  - text: finished\n", func(o *subagent.Options) { ds.Store = o.Store; o.Store = ds })
	r := seedDeadRun(t, h, "S-b1b1b1", "researcher", 0, []llm.Message{llm.UserText("Begin the task: resume me")})
	ds.down.Store(true)
	recovered := make(chan error, 1)
	go func() { recovered <- h.m.Recover(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); ds.fails.Load() < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the taken-over run never read its conversation")
		}
	}
	ds.down.Store(false)
	if err := <-recovered; err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, h, r.ID)
	if got.Status != lifecycle.Success || got.Attempts != 1 {
		t.Fatalf("status %s attempts %d error %q, want success after the outage", got.Status, got.Attempts, got.Error)
	}
	if n := parentNotes(t, h, r.ShortID); n != 1 {
		t.Fatalf("the parent got the result %d times", n)
	}
}

// A gone process that owned no run (a cluster's gateway, a daemon killed
// while idle) has its registration removed by recovery, not kept for
// good; a live one's stays.
func TestRecoverRemovesAGoneInstanceWithoutRuns(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: unused\n", nil)
	ctx := context.Background()
	host, _ := os.Hostname()
	old := time.Now().Add(-time.Hour)
	gone := store.Instance{ID: "gone-gateway", Host: host, PID: 1 << 30, StartedAt: old, HeartbeatAt: old}
	live := store.Instance{ID: "live-gateway", Host: "elsewhere", PID: 1, StartedAt: time.Now(), HeartbeatAt: time.Now()}
	for _, in := range []store.Instance{gone, live} {
		if err := h.store.RegisterInstance(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := h.store.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, in := range all {
		ids[in.ID] = true
	}
	if ids[gone.ID] || !ids[live.ID] {
		t.Fatalf("instances after recovery: %v; want the gone one removed and the live one kept", ids)
	}
}

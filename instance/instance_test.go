package instance_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

// failingHeartbeats is a store whose heartbeats fail while down is set.
type failingHeartbeats struct {
	store.OwnerStore
	down  atomic.Bool
	beats atomic.Int32
}

func (f *failingHeartbeats) Heartbeat(ctx context.Context, id string, at time.Time) error {
	f.beats.Add(1)
	if f.down.Load() {
		return errors.New("database is restarting")
	}
	return f.OwnerStore.Heartbeat(ctx, id, at)
}

func open(t *testing.T) (*failingHeartbeats, func() time.Time, func(time.Duration)) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ava.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	return &failingHeartbeats{OwnerStore: st}, clock, func(d time.Duration) { now.Add(int64(d)) }
}

// Hold answers from memory while the lease is fresh, renews an old one
// first, and, once another process removed the registration, says the
// lease is lost for good: the instance registers again under a new ID
// (the next epoch), and the old ID is never held again.
func TestHoldRenewsAndDetectsALostLease(t *testing.T) {
	st, clock, advance := open(t)
	in, err := instance.Start(context.Background(), instance.Options{Store: st, Clock: clock, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx := context.Background()
	old := in.ID()
	if err := in.Hold(ctx, old); err != nil || st.beats.Load() != 0 {
		t.Fatalf("fresh lease: err %v, %d heartbeats (want none)", err, st.beats.Load())
	}
	advance(2 * time.Hour) // past two thirds of the TTL (3 h)
	if err := in.Hold(ctx, old); err != nil || st.beats.Load() != 1 {
		t.Fatalf("old lease: err %v, %d heartbeats (want one renewal)", err, st.beats.Load())
	}
	// Another process declares it gone (a pause past the TTL).
	if _, err := st.InterruptOwner(ctx, old, time.Time{}); err != nil {
		t.Fatal(err)
	}
	advance(2 * time.Hour)
	if err := in.Hold(ctx, old); !errors.Is(err, instance.ErrLeaseLost) {
		t.Fatalf("removed lease: err %v, want ErrLeaseLost", err)
	}
	if in.ID() == old {
		t.Fatal("the instance kept its lost ID")
	}
	if err := in.Hold(ctx, old); !errors.Is(err, instance.ErrLeaseLost) {
		t.Fatalf("the lost ID was held again: %v", err)
	}
	if err := in.Hold(ctx, in.ID()); err != nil {
		t.Fatalf("the new lease: %v", err)
	}
	insts, err := st.Instances(ctx)
	if err != nil || len(insts) != 1 || insts[0].ID != in.ID() {
		t.Fatalf("registered: %+v %v", insts, err)
	}
}

// While the store cannot be reached, Hold waits (the run waits out the
// outage) and goes on once a heartbeat is recorded; it gives up only
// when its context ends.
func TestHoldWaitsOutAnOutage(t *testing.T) {
	st, clock, advance := open(t)
	in, err := instance.Start(context.Background(), instance.Options{Store: st, Clock: clock, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	advance(3 * time.Hour)
	st.down.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := in.Hold(ctx, in.ID()); err == nil || errors.Is(err, instance.ErrLeaseLost) {
		t.Fatalf("during the outage: %v, want the context's end", err)
	}
	done := make(chan error, 1)
	go func() { done <- in.Hold(context.Background(), in.ID()) }()
	time.Sleep(200 * time.Millisecond)
	st.down.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the outage: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Hold did not go on after the outage")
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pausable is a store whose calls wait while it is paused, as a
// SIGSTOPped database's do: they answer late, not with an error.
type pausable struct {
	store.OwnerStore
	mu     sync.Mutex
	resume chan struct{} // nil while running
}

func (p *pausable) pause() {
	p.mu.Lock()
	p.resume = make(chan struct{})
	p.mu.Unlock()
}

func (p *pausable) unpause() {
	p.mu.Lock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
	p.mu.Unlock()
}

func (p *pausable) wait() {
	p.mu.Lock()
	c := p.resume
	p.mu.Unlock()
	if c != nil {
		<-c
	}
}

func (p *pausable) Heartbeat(ctx context.Context, id string, at time.Time) error {
	p.wait()
	return p.OwnerStore.Heartbeat(ctx, id, at)
}

func (p *pausable) Instances(ctx context.Context) ([]store.Instance, error) {
	p.wait()
	return p.OwnerStore.Instances(ctx)
}

// A database paused for several times the TTL makes every live
// process's heartbeat older than the TTL when it comes back. A judge
// that has seen its own calls hang declares nobody gone until it has
// seen the store answer for the TTL again, by which time the live owner
// renewed: it keeps its runs. An owner that stops renewing while the
// store is up is still found gone. (Before, the judge declared the live
// owner gone the moment the database came back.)
func TestOutageLongerThanTheTTLTakesNoLiveOwner(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ava.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ownerDB, judgeDB := &pausable{OwnerStore: st}, &pausable{OwnerStore: st}
	ctx := context.Background()
	const beat, ttl = 50 * time.Millisecond, 400 * time.Millisecond
	opts := instance.Options{Store: ownerDB, Heartbeat: beat, TTL: ttl, Logger: slog.New(slog.DiscardHandler)}
	owner, err := instance.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	opts.Store = judgeDB
	judge, err := instance.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer judge.Close()
	// A registration that never renews, on this host with a live
	// process ID: only its age says it is gone.
	host, _ := os.Hostname()
	if err := st.RegisterInstance(ctx, store.Instance{ID: "stopped", Host: host, PID: os.Getpid(), StartedAt: time.Now(), HeartbeatAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	gone := func() []string {
		t.Helper()
		g, err := judge.Gone(ctx, []string{owner.ID(), "stopped"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range g {
			ids = append(ids, o.ID)
		}
		return ids
	}
	time.Sleep(2 * ttl)
	if got := gone(); len(got) != 1 || got[0] != "stopped" {
		t.Fatalf("before the outage: gone %v, want only the stopped registration", got)
	}

	// The database pauses for everyone; the judge's calls come back a
	// little before the owner's renewal does (the worst case).
	ownerDB.pause()
	judgeDB.pause()
	defer ownerDB.unpause() // before the instances close
	time.Sleep(4 * ttl)
	judgeDB.unpause()
	for end := time.Now().Add(4 * beat); time.Now().Before(end); time.Sleep(beat / 4) {
		for _, id := range gone() {
			if id == owner.ID() {
				t.Fatal("the live owner was declared gone as the database came back")
			}
		}
	}
	ownerDB.unpause()
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(beat / 2) {
		for _, id := range gone() {
			if id == owner.ID() {
				t.Fatal("the live owner was declared gone after the outage")
			}
		}
	}
	if got := gone(); len(got) != 1 || got[0] != "stopped" {
		t.Fatalf("after the outage: gone %v, want only the stopped registration", got)
	}
}

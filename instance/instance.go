// Package instance gives each Ava process that runs subagents an identity
// in the store and a lease it keeps by heartbeat, and decides when
// another process's instance is gone, so that only runs whose owner died
// are ended as interrupted.
//
// An owner is gone when any of these holds:
//   - it is not registered (it never was, or it was removed: a clean
//     shutdown removes it only after its runs ended, and recovery removes
//     a dead one with its runs);
//   - it runs on this host and its process ID is not alive (kill -9, a
//     crash: found at once);
//   - its heartbeat is older than the TTL (another host, or a process ID
//     reused by an unrelated process, or a process stopped for longer
//     than the TTL).
//
// The same rules hold for workers on several machines sharing one store:
// the heartbeat decides across hosts, the process check only speeds up
// the common single-machine case.
//
// The instance ID is also the lease's epoch. A process that finds its
// registration removed (it was paused past the TTL and another process
// ended or took over its runs) registers again under a new ID, so that
// every write it makes under the old one is refused by the store (see
// store.ErrStaleOwner), and Hold tells its runs to stop before their
// next model or tool call.
package instance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/store"
)

// Defaults of Options.
const (
	DefaultHeartbeat = 5 * time.Second
	DefaultTTL       = 30 * time.Second
)

// Options configure an Instance.
type Options struct {
	Store store.OwnerStore
	// Heartbeat is how often the lease is renewed (default 5 s).
	Heartbeat time.Duration
	// TTL is how old a heartbeat may be before its instance counts as
	// gone (default 30 s; at least three heartbeats).
	TTL    time.Duration
	Clock  func() time.Time
	Logger *slog.Logger
}

// ErrLeaseLost is returned by Hold for runs recorded under a lease this
// process no longer holds.
var ErrLeaseLost = errors.New("this process lost its lease on the run (it was declared gone by another process, which took over or ended its runs)")

// Instance is this process's registration. Close it after everything it
// owns has ended.
type Instance struct {
	opt  Options
	host string
	pid  int
	now  func() time.Time
	log  *slog.Logger

	mu sync.Mutex
	id string // the current lease's ID (epoch)
	// okWall and okMono are when the last write that proved the lease
	// (registration or heartbeat) started: by the clock (as the other
	// processes judge it) and by the monotonic clock.
	okWall time.Time
	okMono time.Time

	renewMu sync.Mutex // one synchronous renewal at a time (Hold)

	// link is what this process saw of the store: whether it answered
	// without a break, and since when (see judging).
	link link

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start registers this process and starts renewing its lease until
// Close.
func Start(ctx context.Context, opt Options) (*Instance, error) {
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = DefaultHeartbeat
	}
	if opt.TTL <= 0 {
		opt.TTL = DefaultTTL
	}
	opt.TTL = max(opt.TTL, 3*opt.Heartbeat)
	host, _ := os.Hostname()
	in := &Instance{opt: opt, id: uuid.NewString(), host: host, pid: os.Getpid(), now: opt.Clock, log: opt.Logger}
	if in.now == nil {
		in.now = time.Now
	}
	if in.log == nil {
		in.log = slog.Default()
	}
	in.log = in.log.With("component", "instance")
	if err := in.register(ctx, in.ID()); err != nil {
		return nil, err
	}
	hctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	in.wg.Go(func() { in.beat(hctx) })
	return in, nil
}

// ID is this instance's current ID (its lease's epoch), recorded as the
// owner of the runs it starts. It changes when the lease was lost.
func (in *Instance) ID() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.id
}

// register records the instance under id and proves the lease from now.
func (in *Instance) register(ctx context.Context, id string) error {
	mono, now := time.Now(), in.now()
	err := in.call(func() error {
		return in.opt.Store.RegisterInstance(ctx, store.Instance{ID: id, Host: in.host, PID: in.pid, StartedAt: now, HeartbeatAt: now})
	})
	if err != nil {
		return fmt.Errorf("register this process: %w", err)
	}
	in.proved(id, now, mono)
	return nil
}

// proved records that a write started at wall/mono proved lease id.
func (in *Instance) proved(id string, wall, mono time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.id == id && !wall.Before(in.okWall) {
		in.okWall, in.okMono = wall, mono
	}
}

// renew writes a heartbeat for the current lease. A lease found removed
// is lost: the instance registers again under a new ID and renew
// returns ErrLeaseLost for the old one.
func (in *Instance) renew(ctx context.Context) error {
	id := in.ID()
	mono, now := time.Now(), in.now()
	err := in.call(func() error { return in.opt.Store.Heartbeat(ctx, id, now) })
	switch {
	case err == nil:
		in.proved(id, now, mono)
		return nil
	case errors.Is(err, store.ErrNotFound):
		in.log.Error("this process was declared gone by another (no heartbeat for longer than the TTL); its subagents were taken over or interrupted there, and stop here", "ttl", in.opt.TTL, "instance", id)
		in.rotate(ctx, id)
		return fmt.Errorf("instance %s: %w", id, ErrLeaseLost)
	}
	return fmt.Errorf("renew the lease of instance %s: %w", id, err)
}

// rotate replaces the lost lease old with a new ID and registers it.
func (in *Instance) rotate(ctx context.Context, old string) {
	in.mu.Lock()
	if in.id != old {
		in.mu.Unlock()
		return
	}
	in.id, in.okWall, in.okMono = uuid.NewString(), time.Time{}, time.Time{}
	id := in.id
	in.mu.Unlock()
	if err := in.register(ctx, id); err != nil && ctx.Err() == nil {
		in.log.Error("register again", "instance", id, "err", err)
	}
}

// fresh reports whether the lease id is current and was proved recently
// enough that no other process can have declared it gone: less than two
// thirds of the TTL ago, by the clock and by the monotonic clock (which
// a paused process's sleep does not fool).
func (in *Instance) fresh(id string) (current, fresh bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if id != in.id {
		return false, false
	}
	if in.okWall.IsZero() {
		return true, false
	}
	age := max(in.now().Sub(in.okWall), time.Since(in.okMono))
	return true, age < in.opt.TTL*2/3
}

// Hold returns nil when this process still holds the lease under which
// it recorded runs as owner, and an error wrapping ErrLeaseLost when it
// does not: its runs must stop before their next model or tool call.
// A lease proved recently is held without a store round trip; an older
// one is renewed first. While the store cannot be reached Hold retries,
// so a run waits out an outage, until ctx ends.
func (in *Instance) Hold(ctx context.Context, owner string) error {
	current, fresh := in.fresh(owner)
	switch {
	case !current:
		return fmt.Errorf("instance %s: %w", owner, ErrLeaseLost)
	case fresh:
		return nil
	}
	in.renewMu.Lock()
	defer in.renewMu.Unlock()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if current, fresh := in.fresh(owner); !current {
			return fmt.Errorf("instance %s: %w", owner, ErrLeaseLost)
		} else if fresh {
			return nil
		}
		err := in.renew(ctx)
		if err == nil || errors.Is(err, ErrLeaseLost) {
			continue
		}
		in.log.Warn("lease not confirmed; the run waits", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("confirm the lease: %w", context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// beat renews the lease until ctx is done. An instance found removed
// (declared dead after a long pause) registers again under a new ID:
// its runs were taken over or ended by whoever removed it, and it says
// so.
func (in *Instance) beat(ctx context.Context) {
	t := time.NewTicker(in.opt.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := in.renew(ctx); err != nil && !errors.Is(err, ErrLeaseLost) && ctx.Err() == nil {
			in.log.Warn("heartbeat not recorded", "err", err)
		}
	}
}

// Close stops the heartbeat and removes the registration.
func (in *Instance) Close() error {
	in.cancel()
	in.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return in.opt.Store.RemoveInstance(ctx, in.ID())
}

// Gone returns which of owners are gone (see the package doc), each as
// its registration was seen (only the ID, no heartbeat, when it was not
// registered):
// store.Takeover.Seen, so that an owner that renews its lease before
// its runs are recovered keeps them. This instance never is gone.
func (in *Instance) Gone(ctx context.Context, owners []string) ([]store.Instance, error) {
	var all []store.Instance
	err := in.call(func() (err error) {
		all, err = in.opt.Store.Instances(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find gone owners: %w", err)
	}
	now := in.now()
	judge := in.mayJudgeAge(now)
	byID := make(map[string]store.Instance, len(all))
	for _, o := range all {
		byID[o.ID] = o
	}
	self := in.ID()
	var gone []store.Instance
	for _, id := range owners {
		if id == self {
			continue
		}
		o, ok := byID[id]
		switch {
		case !ok:
			gone = append(gone, store.Instance{ID: id})
		case in.dead(o, now, judge):
			gone = append(gone, o)
		}
	}
	return gone, nil
}

// dead reports whether a registered instance is gone: its process is
// dead on this host, or (when this process may judge by age, see
// mayJudgeAge) its heartbeat is older than the TTL.
func (in *Instance) dead(o store.Instance, now time.Time, byAge bool) bool {
	if byAge && now.Sub(o.HeartbeatAt) > in.opt.TTL {
		return true
	}
	return o.Host == in.host && !processAlive(o.PID)
}

// processAlive reports whether a process with this ID exists on this
// host.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

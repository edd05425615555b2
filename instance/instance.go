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

// Instance is this process's registration. Close it after everything it
// owns has ended.
type Instance struct {
	opt  Options
	id   string
	host string
	pid  int
	now  func() time.Time
	log  *slog.Logger

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
	in.log = in.log.With("component", "instance", "instance", in.id)
	if err := in.register(ctx); err != nil {
		return nil, err
	}
	hctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	in.wg.Go(func() { in.beat(hctx) })
	return in, nil
}

// ID is this instance's ID, recorded as the owner of the runs it starts.
func (in *Instance) ID() string { return in.id }

func (in *Instance) register(ctx context.Context) error {
	now := in.now()
	err := in.opt.Store.RegisterInstance(ctx, store.Instance{ID: in.id, Host: in.host, PID: in.pid, StartedAt: now, HeartbeatAt: now})
	if err != nil {
		return fmt.Errorf("register this process: %w", err)
	}
	return nil
}

// beat renews the lease until ctx is done. An instance found removed
// (declared dead after a long pause) registers again: its runs were
// ended by whoever removed it, and it says so.
func (in *Instance) beat(ctx context.Context) {
	t := time.NewTicker(in.opt.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := in.opt.Store.Heartbeat(ctx, in.id, in.now())
		switch {
		case errors.Is(err, store.ErrNotFound):
			in.log.Error("this process was declared gone by another (no heartbeat for longer than the TTL); its running subagents were marked interrupted", "ttl", in.opt.TTL)
			if err := in.register(ctx); err != nil && ctx.Err() == nil {
				in.log.Error("register again", "err", err)
			}
		case err != nil && ctx.Err() == nil:
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
	return in.opt.Store.RemoveInstance(ctx, in.id)
}

// Gone returns which of owners are gone (see the package doc); this
// instance never is.
func (in *Instance) Gone(ctx context.Context, owners []string) ([]string, error) {
	all, err := in.opt.Store.Instances(ctx)
	if err != nil {
		return nil, fmt.Errorf("find gone owners: %w", err)
	}
	byID := make(map[string]store.Instance, len(all))
	for _, o := range all {
		byID[o.ID] = o
	}
	now := in.now()
	var gone []string
	for _, id := range owners {
		if id == in.id {
			continue
		}
		o, ok := byID[id]
		if !ok || in.dead(o, now) {
			gone = append(gone, id)
		}
	}
	return gone, nil
}

// dead reports whether a registered instance is gone.
func (in *Instance) dead(o store.Instance, now time.Time) bool {
	if now.Sub(o.HeartbeatAt) > in.opt.TTL {
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

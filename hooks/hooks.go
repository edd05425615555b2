// Package hooks delivers Ava's lifecycle events to the person's hooks:
// commands (the event JSON on stdin) and webhooks (a signed POST), as
// config.yaml and the data root's roles define them (package hookspec).
//
// Delivery is durable. The Router is the store's Outbox: each stored
// event a hook hears gets a delivery row in the transaction that stores
// the event, one per event and hook, with an ID for good (a UUIDv7 the
// store draws: X-Ava-Delivery, the same on every attempt and never
// another delivery's, even in another database). A Dispatcher in every
// process that has hooks claims due rows with a lease under its
// instance ID, delivers them, and records each attempt: delivered,
// failed (retried with backoff) or dead (attempts spent, kept until
// `ava hooks retry`). Whichever process of a data root or cluster runs
// next delivers what is due, each delivery by one process at a time.
//
// Ordering: a hook gets one run's deliveries one at a time, in the
// order they were recorded (the store claims none while an earlier one
// of the same hook, run and host is pending or failed); a process
// attempts a hook's deliveries one after the other. Deliveries of
// different runs, or of a session's own events, may overlap in a
// cluster.
//
// Failure: a process that stops mid-attempt leaves its claims to its
// instance's lease. Once recovery finds the process gone (at once for a
// dead process on the same machine, after the instance TTL otherwise)
// and removes its instance, its claims are free and the next process
// delivers them, each run's still in order (the one interrupted again:
// the receiver sees the same X-Ava-Delivery twice). A process paused
// rather than dead loses its claims the same way; what it records
// afterwards is refused (store.ErrStaleOwner). A slow or failing hook
// delays only its own deliveries: nothing on a run's path waits for
// one.
package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/hookspec"
	"github.com/avaagent/ava/store"
)

// Router turns stored events into deliveries for the hooks that hear
// them: the config file's, and the hooks of the role whose subagent
// caused the event.
type Router struct {
	// Hooks are the config file's hooks.
	Hooks []hookspec.Spec
	// Current, when set, returns the config file's hooks as they are
	// now (a daemon's reload changes them) instead of Hooks.
	Current func() []hookspec.Spec
	// RoleHooks returns a role's own hooks (nil: none).
	RoleHooks func(role string) []hookspec.Spec
	// Listening, when set, reports whether any hook is defined at all:
	// when not, Outbox returns at once, so a runtime without hooks does
	// no work per stored event.
	Listening func() bool
	// Root is the data root (the session files' output paths).
	Root string
	// Host is this machine: a command delivery runs on it.
	Host string
	// Wake is called after an event got deliveries (the local
	// Dispatcher's Kick); it must not block.
	Wake func()
	// Log receives what could not be turned into a delivery.
	Log *slog.Logger
}

// Outbox is the Router as the store's Outbox.
func (r *Router) Outbox(ev event.Event) []store.HookDelivery {
	if r.Listening != nil && !r.Listening() {
		return nil
	}
	n, ok, err := NoticeOf(ev, r.Root)
	if err != nil && r.Log != nil {
		r.Log.Warn("hook event not delivered: its content does not decode", "session", ev.Session, "seq", ev.Seq, "type", ev.Type, "err", err)
	}
	if !ok {
		return nil
	}
	var out []store.HookDelivery
	for _, h := range r.hearing(n) {
		h = h.WithDefaults()
		d := store.HookDelivery{HookID: h.ID(), Kind: h.Kind(), Event: n.Event, Run: n.Run, Body: string(n.Body), MaxAttempts: h.Attempts}
		if d.Kind == hookspec.KindCommand {
			d.Host = r.Host
		}
		out = append(out, d)
	}
	if len(out) > 0 && r.Wake != nil {
		r.Wake()
	}
	return out
}

// hearing are the hooks that hear n, each target once.
func (r *Router) hearing(n Notice) []hookspec.Spec {
	var out []hookspec.Spec
	seen := map[string]bool{}
	add := func(hs []hookspec.Spec) {
		for _, h := range hs {
			if h.Hears(n.Event) && !seen[h.ID()] {
				seen[h.ID()] = true
				out = append(out, h)
			}
		}
	}
	if r.Current != nil {
		add(r.Current())
	} else {
		add(r.Hooks)
	}
	if n.Role != "" && r.RoleHooks != nil {
		add(r.RoleHooks(n.Role))
	}
	return out
}

// Options configure a Dispatcher.
type Options struct {
	Store store.HookStore
	// Hooks are every hook this process has (config file and roles),
	// by ID: it claims their deliveries only.
	Hooks map[string]hookspec.Spec
	// Owner (required) returns this process's instance ID as it is now
	// (it changes when the process lost its lease and registered
	// again): each claim is recorded under it, so that once recovery
	// removes a gone instance its claims are free at once. Host is the
	// machine.
	Owner func() string
	Host  string
	// Sender makes the attempts.
	Sender *Sender
	// Poll is how often the store is looked at for due deliveries
	// (other processes' events, retries coming due); default 1s.
	Poll time.Duration
	Log  *slog.Logger
}

// Outcomes count this process's attempts by outcome.
type Outcomes struct {
	Delivered, Failed, Dead atomic.Int64
}

// Dispatcher delivers due hook deliveries until its context ends.
type Dispatcher struct {
	o    Options
	wake chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	busy map[string]bool // hooks with an attempt running
	// hooks are the hooks it delivers for, by ID (SetHooks swaps them).
	hooks atomic.Pointer[map[string]hookspec.Spec]
	// failing is set while claims fail (the store is unreachable), so
	// an outage is logged once, not once a poll.
	failing atomic.Bool
	// Outcomes are the attempts made so far.
	Outcomes Outcomes
}

// NewDispatcher returns a Dispatcher; Run starts it.
func NewDispatcher(o Options) *Dispatcher {
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{o: o, wake: make(chan struct{}, 1), busy: map[string]bool{}}
	d.SetHooks(o.Hooks)
	return d
}

// SetHooks replaces the hooks the dispatcher claims and delivers for
// (a reload of the configuration), by ID. An attempt under way
// finishes with the hook it started with; a delivery claimed for a
// hook no longer here is left to its lease and stays pending until a
// process that has the hook delivers it.
func (d *Dispatcher) SetHooks(hooks map[string]hookspec.Spec) {
	m := make(map[string]hookspec.Spec, len(hooks))
	for id, h := range hooks {
		m[id] = h
	}
	d.hooks.Store(&m)
	d.Kick()
}

// current are the hooks in force, by ID.
func (d *Dispatcher) current() map[string]hookspec.Spec { return *d.hooks.Load() }

// Kick asks for a look at the store now (an event just got deliveries).
func (d *Dispatcher) Kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the attempts in flight
// (each bounded by its hook's timeout; their leases expire if the
// process dies first).
func (d *Dispatcher) Run(ctx context.Context) {
	defer d.wg.Wait()
	t := time.NewTicker(d.o.Poll)
	defer t.Stop()
	for {
		d.pass(ctx, nil, &d.wg)
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-t.C:
		}
	}
}

// batch is how many deliveries one claim takes: a hook's are
// attempted one after the other, so the lease covers that many
// timeouts.
const batch = 8

// pass claims what is due (of rows, when set) for the hooks not busy
// in this process, and starts one goroutine per hook (counted in wg)
// that attempts its deliveries in order. It returns how many it
// started.
func (d *Dispatcher) pass(ctx context.Context, rows []int64, wg *sync.WaitGroup) int {
	hooks := d.idle()
	if len(hooks) == 0 || ctx.Err() != nil {
		return 0
	}
	ds, err := d.o.Store.ClaimHookDeliveries(ctx, store.HookClaim{Owner: d.o.Owner(), Host: d.o.Host, Hooks: hooks,
		Rows: rows, Lease: d.lease(), Limit: batch})
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrClosed) && d.failing.CompareAndSwap(false, true) {
			d.o.Log.Warn("hook deliveries cannot be claimed; trying again every poll (said once until it works)", "err", err)
		}
		return 0
	}
	if d.failing.CompareAndSwap(true, false) {
		d.o.Log.Info("hook deliveries can be claimed again")
	}
	for _, group := range byHook(ds) {
		d.setBusy(group[0].HookID, true)
		wg.Add(1)
		go func() {
			defer func() { d.setBusy(group[0].HookID, false); wg.Done(); d.Kick() }()
			for _, dl := range group {
				d.attempt(context.WithoutCancel(ctx), dl)
			}
		}()
	}
	return len(ds)
}

// idle are the IDs of the process's hooks that have no attempt running.
func (d *Dispatcher) idle() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	hooks := d.current()
	ids := make([]string, 0, len(hooks))
	for id := range hooks {
		if !d.busy[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

func (d *Dispatcher) setBusy(id string, busy bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if busy {
		d.busy[id] = true
	} else {
		delete(d.busy, id)
	}
}

// inFlight reports whether an attempt is running.
func (d *Dispatcher) inFlight() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.busy) > 0
}

// byHook groups claimed deliveries by hook, each group in claim order
// (oldest due first): a hook gets its events one at a time, in order,
// from one process.
func byHook(ds []store.HookDelivery) [][]store.HookDelivery {
	var out [][]store.HookDelivery
	at := map[string]int{}
	for _, d := range ds {
		i, ok := at[d.HookID]
		if !ok {
			i = len(out)
			at[d.HookID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], d)
	}
	return out
}

// lease is how long a claim holds its deliveries: a batch of the
// longest timeout of the process's hooks, and a margin to record the
// attempts.
func (d *Dispatcher) lease() time.Duration {
	longest := time.Duration(0)
	for _, h := range d.current() {
		longest = max(longest, h.WithDefaults().Timeout)
	}
	return batch*longest + 30*time.Second
}

// attempt delivers dl once and records how it went.
func (d *Dispatcher) attempt(ctx context.Context, dl store.HookDelivery) {
	spec, ok := d.current()[dl.HookID]
	if !ok {
		return // claimed by hook ID, so it is one of ours
	}
	err := d.o.Sender.Send(ctx, Attempt{Spec: spec, ID: dl.ID, Event: dl.Event, Session: dl.SessionKey, Body: []byte(dl.Body)})
	// Recorded under the claim's owner: a lease lost meanwhile fences
	// the record (another process may hold the delivery now).
	a := store.HookAttempt{Owner: dl.LeaseOwner, Status: store.HookDelivered, NextAt: time.Now()}
	switch {
	case err == nil:
		d.Outcomes.Delivered.Add(1)
	case dl.Attempts+1 >= dl.MaxAttempts:
		a.Status, a.Error = store.HookDead, err.Error()
		d.Outcomes.Dead.Add(1)
		d.o.Log.Warn("hook delivery dead-lettered: its attempts are spent (ava hooks retry sends it again)",
			"delivery", dl.ID, "hook", dl.HookID, "target", spec.Target(), "event", dl.Event, "attempts", dl.Attempts+1, "err", err)
	default:
		a.Status, a.Error = store.HookFailed, err.Error()
		a.NextAt = time.Now().Add(spec.Delay(dl.Attempts + 2))
		d.Outcomes.Failed.Add(1)
		d.o.Log.Info("hook delivery failed; it will be tried again", "delivery", dl.ID, "hook", dl.HookID,
			"event", dl.Event, "attempt", dl.Attempts+1, "next", a.NextAt.Format(time.RFC3339), "err", err)
	}
	if err := d.o.Store.FinishHookDelivery(ctx, dl.Row, a); err != nil {
		d.o.Log.Warn("hook delivery attempt not recorded; it will be tried again once its claim is free (its lease ends, or this process is found gone)", "delivery", dl.ID, "err", err)
	}
}

// DeliverNow claims the deliveries of rows (every one when empty) that
// are due and makes one attempt at each, waiting for them. It returns
// how many it attempted (another process may hold the others, and a
// run's later delivery waits for its earlier ones).
func (d *Dispatcher) DeliverNow(ctx context.Context, rows []int64) int {
	n := 0
	var wg sync.WaitGroup
	for ctx.Err() == nil {
		started := d.pass(ctx, rows, &wg)
		n += started
		if started == 0 && !d.inFlight() {
			break
		}
		if started == 0 {
			select { // attempts in flight: wait for room
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	wg.Wait()
	return n
}

// Test sends a made-up event named name to each of hooks that hears it,
// now, without recording anything, and returns each hook's outcome by
// ID (nil: accepted).
func Test(ctx context.Context, s *Sender, hooks []hookspec.Spec, name string) (map[string]error, error) {
	n, err := Sample(name, time.Now())
	if err != nil {
		return nil, err
	}
	out := map[string]error{}
	for _, h := range hooks {
		if !h.Hears(name) {
			continue
		}
		if _, done := out[h.ID()]; done {
			continue
		}
		out[h.ID()] = s.Send(ctx, Attempt{Spec: h, Event: name, Session: "ava:test:hook", Body: n.Body})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no hook hears %s", name)
	}
	return out, nil
}

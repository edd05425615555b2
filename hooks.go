package ava

import (
	"context"
	"fmt"
	"strings"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/hooks"
	"github.com/avaagent/ava/hookspec"
	"github.com/avaagent/ava/store"
)

// Hook is a lifecycle hook of the runtime (config.yaml's or a data-root
// role's) and where it is defined.
type Hook = app.HookSource

// HookDelivery is one event's delivery to one hook, as stored (its
// status: HookPending, HookFailed, HookDead, HookDelivered; attempts,
// last error and body), and what its hook reaches as shown.
type HookDelivery struct {
	store.HookDelivery
	// Target is what the hook reaches, as shown (hookspec.Spec.Target:
	// the command line, or a URL's scheme and host only), from the
	// running configuration by the delivery's HookID: the store keeps
	// no URL. "" when no hook of this runtime has that ID any more.
	Target string
}

// HookFilter selects deliveries (by status, by ID, how many).
type HookFilter = store.HookFilter

// Hook delivery statuses.
const (
	HookPending   = store.HookPending
	HookFailed    = store.HookFailed
	HookDead      = store.HookDead
	HookDelivered = store.HookDelivered
)

// HookStatuses are the delivery statuses in the order they are shown.
var HookStatuses = store.HookStatuses

// HookFigures are the deliveries counted: in the store by status (the
// whole data root or cluster), and this process's attempts by outcome.
type HookFigures struct {
	ByStatus  map[string]int
	Delivered int64
	Failed    int64
	Dead      int64
}

// HookTest is how one hook took a test event.
type HookTest struct {
	Hook Hook
	// Err is nil when the hook accepted the event.
	Err error
}

// Hooks returns the runtime's hooks.
func (r *Runtime) Hooks() []Hook { return r.in.Hooks.All() }

// HookDeliveries returns the deliveries f selects, newest first, masked:
// the body and last error by the redactor, the target as shown
// (hookspec.Spec.Target) from the running configuration. Every surface
// (the API, `ava hooks`, the library) reads deliveries here.
func (r *Runtime) HookDeliveries(ctx context.Context, f HookFilter) ([]HookDelivery, error) {
	ds, err := r.in.Store.HookDeliveries(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("hook deliveries: %w", err)
	}
	targets := map[string]string{}
	for _, h := range r.in.Hooks.All() {
		targets[h.ID()] = h.Target()
	}
	out := make([]HookDelivery, len(ds))
	for i, d := range ds {
		d.Body = r.in.Redactor.String(d.Body)
		d.LastError = r.in.Redactor.String(d.LastError)
		out[i] = HookDelivery{HookDelivery: d, Target: targets[d.HookID]}
	}
	return out, nil
}

// RetryHookDeliveries sends failed and dead deliveries back to pending
// (those of ids; every failed and dead one when ids is empty), makes one
// attempt at each that this process's hooks can deliver, waiting for
// them, and returns them as they are then. Another process may hold some.
// ErrReadOnly when opened read-only; ErrInvalid when the runtime has no
// hook to deliver with.
func (r *Runtime) RetryHookDeliveries(ctx context.Context, ids []int64) ([]HookDelivery, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	d := r.in.Hooks.Dispatcher
	if d == nil {
		return nil, invalidf("no hook is configured here (hooks: in config.yaml or a data-root role), so nothing can be delivered")
	}
	var statuses []string
	if len(ids) == 0 {
		statuses = []string{HookFailed, HookDead}
	}
	retried, err := r.in.Store.RetryHookDeliveries(ctx, ids, statuses)
	if err != nil {
		return nil, fmt.Errorf("retry hook deliveries: %w", err)
	}
	if len(retried) == 0 {
		return nil, nil
	}
	d.DeliverNow(ctx, retried)
	return r.HookDeliveries(ctx, HookFilter{IDs: retried, Limit: len(retried)})
}

// TestHook sends a made-up event named event (subagent:complete, …) to
// every hook that hears it, now, without recording a delivery, and
// returns how each took it. The body says "test": true.
func (r *Runtime) TestHook(ctx context.Context, event string) ([]HookTest, error) {
	all := r.in.Hooks.All()
	specs := make([]Hook, 0, len(all))
	for _, h := range all {
		if h.Hears(event) {
			specs = append(specs, h)
		}
	}
	if len(specs) == 0 {
		if !hookspec.Known(event) {
			return nil, invalidf("unknown hook event %q; known: %s", event, strings.Join(hookspec.Events, ", "))
		}
		return nil, fmt.Errorf("%w: no hook hears %s", ErrNotFound, event)
	}
	plain := make([]hookspec.Spec, len(specs))
	for i, h := range specs {
		plain[i] = h.Spec
	}
	res, err := hooks.Test(ctx, r.in.Hooks.Sender, plain, event)
	if err != nil {
		return nil, err
	}
	out := make([]HookTest, len(specs))
	for i, h := range specs {
		out[i] = HookTest{Hook: h, Err: res[h.ID()]}
	}
	return out, nil
}

// HookFigures counts the deliveries.
func (r *Runtime) HookFigures(ctx context.Context) (HookFigures, error) {
	n, err := r.in.Store.CountHookDeliveries(ctx)
	if err != nil {
		return HookFigures{}, fmt.Errorf("hook figures: %w", err)
	}
	f := HookFigures{ByStatus: n}
	if d := r.in.Hooks.Dispatcher; d != nil {
		f.Delivered, f.Failed, f.Dead = d.Outcomes.Delivered.Load(), d.Outcomes.Failed.Load(), d.Outcomes.Dead.Load()
	}
	return f, nil
}

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
// (those of ids, each a delivery's ID or a unique prefix of one; every
// failed and dead one when ids is empty), makes one attempt at each
// that this process's hooks can deliver, waiting for them, and returns
// them as they are then. Another process may hold some, and a run's
// delivery waits for that run's earlier ones. ErrReadOnly when opened
// read-only; ErrInvalid when the runtime has no hook to deliver with or
// a prefix matches several deliveries; ErrNotFound when one matches
// none.
func (r *Runtime) RetryHookDeliveries(ctx context.Context, ids []string) ([]HookDelivery, error) {
	if err := r.writable(); err != nil {
		return nil, err
	}
	d := r.in.Hooks.Dispatcher
	if d == nil || len(r.in.Hooks.All()) == 0 {
		return nil, invalidf("no hook is configured here (hooks: in config.yaml or a data-root role), so nothing can be delivered")
	}
	rows, err := r.hookRows(ctx, ids)
	if err != nil {
		return nil, err
	}
	var statuses []string
	if len(ids) == 0 {
		statuses = []string{HookFailed, HookDead}
	}
	retried, err := r.in.Store.RetryHookDeliveries(ctx, rows, statuses)
	if err != nil {
		return nil, fmt.Errorf("retry hook deliveries: %w", err)
	}
	if len(retried) == 0 {
		return nil, nil
	}
	d.DeliverNow(ctx, retried)
	return r.HookDeliveries(ctx, HookFilter{Rows: retried, Limit: len(retried)})
}

// hookRows resolves delivery IDs or unique prefixes of them to the
// store's rows.
func (r *Runtime) hookRows(ctx context.Context, ids []string) ([]int64, error) {
	rows := make([]int64, 0, len(ids))
	for _, id := range ids {
		prefix := strings.ToLower(strings.TrimSpace(id))
		if prefix == "" {
			return nil, invalidf("an empty delivery ID")
		}
		ds, err := r.in.Store.HookDeliveries(ctx, HookFilter{ID: prefix, Limit: maxAmbiguous + 1})
		if err != nil {
			return nil, fmt.Errorf("find hook delivery %s: %w", id, err)
		}
		switch len(ds) {
		case 0:
			return nil, fmt.Errorf("%w: no hook delivery has an ID starting with %q (ava hooks --all lists them)", ErrNotFound, id)
		case 1:
			rows = append(rows, ds[0].Row)
		default:
			matches := make([]string, 0, len(ds))
			for _, d := range ds[:min(len(ds), maxAmbiguous)] {
				matches = append(matches, d.ID)
			}
			if len(ds) > maxAmbiguous {
				matches = append(matches, "…")
			}
			return nil, fmt.Errorf("%w: delivery ID prefix %q matches %s; give more characters", store.ErrAmbiguous, id, strings.Join(matches, ", "))
		}
	}
	return rows, nil
}

// maxAmbiguous is how many matches an ambiguous delivery ID prefix's
// error names.
const maxAmbiguous = 5

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

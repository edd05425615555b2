package store

import (
	"context"
	"time"

	"github.com/avaagent/ava/event"
)

// Hook delivery statuses.
const (
	// HookPending is a delivery not tried yet (or sent back by a retry).
	HookPending = "pending"
	// HookFailed is a delivery that failed and waits for its next
	// attempt (NextAt).
	HookFailed = "failed"
	// HookDead is a delivery whose attempts are spent: dead-lettered,
	// kept until the person retries it (ava hooks retry).
	HookDead = "dead"
	// HookDelivered is a delivery its hook accepted.
	HookDelivered = "delivered"
)

// HookStatuses are the delivery statuses, in the order they are shown.
var HookStatuses = []string{HookPending, HookFailed, HookDead, HookDelivered}

// HookDelivery is one event to deliver to one hook: recorded in the
// transaction that stores the event (see Outbox), claimed by one process
// at a time with a lease, retried until its hook accepts it or its
// attempts are spent.
type HookDelivery struct {
	ID int64
	// HookID names the hook (hookspec.Spec.ID): only a process that has
	// that hook in its configuration claims the delivery, and it finds
	// what to reach (the command, the URL) there, by this ID. What the
	// hook reaches is not stored: a webhook's URL is often its
	// credential, and it stays in the configuration where the person
	// wrote it.
	HookID string
	// Kind is hookspec.KindCommand or KindURL.
	Kind string
	// Event is the hook event name (subagent:complete, proposal, …).
	Event string
	// SessionKey and Seq are the stored event's: with HookID they make
	// the delivery unique, so an event is delivered once per hook.
	SessionKey string
	Seq        uint64
	// Body is the event JSON sent to the hook.
	Body string
	// Host, for a command hook, is the machine whose processes may run
	// it ("" for a webhook: any process of the cluster may send it).
	Host        string
	Status      string
	Attempts    int
	MaxAttempts int
	// NextAt is when the delivery is due (its next attempt).
	NextAt time.Time
	// LeaseOwner holds the delivery until LeaseUntil while it delivers.
	LeaseOwner string
	LeaseUntil time.Time
	// LastError is why the last attempt failed.
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeliveredAt *time.Time
}

// Outbox is the hook deliveries an event being stored stands for: the
// store calls it for every event AppendEvents stores and records what it
// returns in the same transaction (deliveries a hook already has for
// that event are ignored), so that a stored event never misses its
// deliveries, even when the process stops at once. It runs inside the
// store's write: it must be quick and must not call the store.
type Outbox func(event.Event) []HookDelivery

// HookClaim asks for due deliveries to deliver.
type HookClaim struct {
	// Owner is the claiming process (its instance ID): the lease's
	// holder, and the fence of FinishHookDelivery.
	Owner string
	// Host is the claiming machine: it gets command deliveries of this
	// host only.
	Host string
	// Hooks are the hook IDs the process has: it gets their deliveries
	// only.
	Hooks []string
	// IDs, when set, restricts the claim to these deliveries.
	IDs []int64
	// Lease is how long the deliveries are held.
	Lease time.Duration
	// Limit caps how many are claimed (0: 16).
	Limit int
}

// HookAttempt is how one attempt at a delivery ended.
type HookAttempt struct {
	// Owner must hold the delivery's lease, else nothing is written
	// (ErrStaleOwner).
	Owner string
	// Status is HookDelivered, HookFailed (tried again at NextAt) or
	// HookDead.
	Status string
	NextAt time.Time
	Error  string
}

// HookFilter selects deliveries for HookDeliveries; zero fields select
// everything.
type HookFilter struct {
	Status []string
	IDs    []int64
	// Limit caps the number returned, newest first (0: 100).
	Limit int
}

// HookStore records hook deliveries (see package hooks).
type HookStore interface {
	// ClaimHookDeliveries leases up to c.Limit due deliveries (pending
	// or failed, NextAt passed, no live lease) of c's hooks to c.Owner,
	// atomically, oldest due first: of processes claiming at once, each
	// delivery goes to one.
	ClaimHookDeliveries(ctx context.Context, c HookClaim) ([]HookDelivery, error)
	// FinishHookDelivery records an attempt: Attempts one higher, the
	// status, error and next time of a, and the lease released. It
	// returns an error wrapping ErrStaleOwner, writing nothing, when
	// a.Owner no longer holds the lease.
	FinishHookDelivery(ctx context.Context, id int64, a HookAttempt) error
	// HookDeliveries returns the deliveries f selects, newest first.
	HookDeliveries(ctx context.Context, f HookFilter) ([]HookDelivery, error)
	// RetryHookDeliveries sends failed and dead deliveries back to
	// pending, due now, with their attempts reset: those of ids, or
	// when ids is empty every one in statuses. It returns the IDs it
	// changed.
	RetryHookDeliveries(ctx context.Context, ids []int64, statuses []string) ([]int64, error)
	// CountHookDeliveries counts the deliveries by status.
	CountHookDeliveries(ctx context.Context) (map[string]int, error)
}

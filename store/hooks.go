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
	// ID is the delivery's ID for good: a UUIDv7 the store draws when it
	// records the delivery, sent to the hook on every attempt
	// (X-Ava-Delivery, AVA_HOOK_DELIVERY) and shown by `ava hooks`. It is
	// unique across databases, so a receiver that drops repeated IDs
	// never drops a new event, even after the database was replaced.
	ID string
	// Row is the store's row number: the claim order and the handle of
	// FinishHookDelivery and RetryHookDeliveries. It is unique within
	// one database only (a new database counts from 1 again), so it is
	// never shown nor sent.
	Row int64
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
	// Run is the subagent run the event belongs to (its short ID, the
	// body's jobId), "" for a session's own events. A hook's deliveries
	// of one run are delivered in order: none is claimed while an
	// earlier one of the same hook, run and host is pending or failed.
	Run string
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
	// LeaseOwner holds the delivery until LeaseUntil while it delivers:
	// the claiming process's instance ID (package instance). A claim
	// whose owner is no longer a registered instance (it was declared
	// gone and removed) is released at once, without waiting for
	// LeaseUntil.
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
	// Owner is the claiming process's instance ID (a registered
	// Instance): the lease's holder, and the fence of
	// FinishHookDelivery. Its claims last while it stays registered and
	// at most Lease: once recovery removes it (it is gone), another
	// process may claim them at once.
	Owner string
	// Host is the claiming machine: it gets command deliveries of this
	// host only.
	Host string
	// Hooks are the hook IDs the process has: it gets their deliveries
	// only.
	Hooks []string
	// Rows, when set, restricts the claim to these deliveries.
	Rows []int64
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
	// Rows selects deliveries by row number.
	Rows []int64
	// ID selects the deliveries whose ID starts with it (a whole ID or
	// a prefix; IDs are lower-case).
	ID string
	// Limit caps the number returned, newest first (0: 100).
	Limit int
}

// HookStore records hook deliveries (see package hooks).
type HookStore interface {
	// ClaimHookDeliveries leases up to c.Limit due deliveries (pending
	// or failed, NextAt passed, no live lease) of c's hooks to c.Owner,
	// atomically, oldest due first: of processes claiming at once, each
	// delivery goes to one. A lease is live until LeaseUntil while its
	// owner is a registered instance; a gone owner's claims are free at
	// once. A delivery with a Run is not claimed while an earlier one
	// (a lower Row) of the same hook, run and host is pending or failed,
	// claimed or not: one hook gets one run's events in order, and at
	// most one of them at a time.
	ClaimHookDeliveries(ctx context.Context, c HookClaim) ([]HookDelivery, error)
	// FinishHookDelivery records an attempt: Attempts one higher, the
	// status, error and next time of a, and the lease released. It
	// returns an error wrapping ErrStaleOwner, writing nothing, when
	// a.Owner no longer holds the lease.
	FinishHookDelivery(ctx context.Context, row int64, a HookAttempt) error
	// HookDeliveries returns the deliveries f selects, newest first.
	HookDeliveries(ctx context.Context, f HookFilter) ([]HookDelivery, error)
	// RetryHookDeliveries sends failed and dead deliveries back to
	// pending, due now, with their attempts reset: those of rows, or
	// when rows is empty every one in statuses. It returns the rows it
	// changed.
	RetryHookDeliveries(ctx context.Context, rows []int64, statuses []string) ([]int64, error)
	// CountHookDeliveries counts the deliveries by status.
	CountHookDeliveries(ctx context.Context) (map[string]int, error)
}

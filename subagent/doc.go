// Package subagent is Ava's subagent runtime: roles, spawn requests and
// results, handles, and the Manager that spawns, limits, watches, cancels
// and resumes subagents, plus the orchestrator's tools that drive it.
//
// # Lifecycle
//
// A run's statuses and the moves between them are package lifecycle's
// table; the store refuses any other write. A run is created running
// (queued first when it waits for a slot), and its end is one
// compare-and-set from running to a final status (store.TransitionRun).
// Cancel does not write the store: it cancels the run's context with
// agent.ErrCancelled as the cause, and the loop's own end records
// cancelled. So a run ends exactly once, in the process that owns it, and
// what a cancelled loop would still have produced never reaches the
// parent. A run whose process died is moved to interrupted by the next
// process that finds its owner gone (Manager.Recover). A finished run can
// be resumed with a follow-up (Manager.Send), which moves it back to
// running with its conversation intact.
//
// # Slots and the queue
//
// At most Options.MaxConcurrent runs hold a slot. Members of a group that
// find no free slot wait for one; so do single spawns and follow-ups when
// Options.Overflow is OverflowQueue (otherwise they are refused with
// ErrLimit). Waiting runs are queued: recorded in the store with status
// queued and a subagent:queued lifecycle entry before the spawn returns,
// and given slots first come first served as slots free (admitWaiting
// runs whenever one does, so no run waits while a slot is free). A run
// waits in its own goroutine on a channel and its context (no polling);
// cancelling it, its group's timeout or the manager closing ends it as
// cancelled, timeout or interrupted without calling the model, and a slot
// granted in the same instant is given back. The queue holds at most
// Options.MaxQueued runs; beyond that a spawn is refused with
// ErrQueueFull. Every run's end goes through release, which frees its
// slot or place and admits the next.
//
// # Memory
//
// Only active runs' handles are held (Manager.handles); a finished run's
// handle moves to a weak index, so it lives while a caller holds it, and
// its event journal is dropped (event.Hub.Forget). Every lookup by ID
// that misses memory rebuilds the handle from the store (restore), the
// same way for Get, Send, the status tools and Cancel; Runs lists
// finished runs from the store.
//
// # Events
//
// Each subagent publishes to its own session, "ava:subagent:S-xxxxxx",
// whose event stream exists from the moment the run is registered and is
// independent of its parent's. The parent's session receives only
// SubagentSpawn (published as the run starts, so for a queued run when
// it leaves the queue; a background spawn tool returns once it is in the
// parent's stream) and SubagentComplete
// (also for a run that ended while queued, which has no SubagentSpawn).
// Every event of a run while it is active (its own stream's, and its
// spawn, queue, resume and questions in its parent's) carries the lease
// the run is held under (event.Fence): the store refuses it once another
// process owns the run or it ended, and the refusal stops the run at
// once. The run's own last events (Error, SessionEnd) are written by the
// transaction that records its end; its SubagentComplete, lifecycle
// entry and announcement follow only an end this process's write
// recorded (docs/ownership.md, Fencing).
// Lifecycle entries (queued, start, complete, error, aborted) go to the parent
// session's file, synced: the start entry is written once the first
// model request has left and always before the end entry, and the end entry before
// the result is delivered to the parent.
//
// # Hierarchy
//
// Subagents cannot spawn subagents and cannot write memory. Spawn refuses
// a caller marked as a subagent, and the memory tool refuses such a
// caller, whatever tool list a custom role names.
package subagent

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
// # Events
//
// Each subagent publishes to its own session, "ava:subagent:S-xxxxxx",
// whose event stream exists from the moment the run is registered and is
// independent of its parent's. The parent's session receives only
// SubagentSpawn (published beside the run's first model call, with its
// start record) and SubagentComplete.
// Lifecycle entries (start, complete, error, aborted) go to the parent
// session's file, synced: the start entry is written beside the first
// model call and always before the end entry, and the end entry before
// the result is delivered to the parent.
//
// # Hierarchy
//
// Subagents cannot spawn subagents and cannot write memory. Spawn refuses
// a caller marked as a subagent, and the memory tool refuses such a
// caller, whatever tool list a custom role names.
package subagent

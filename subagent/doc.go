// Package subagent is Ava's subagent runtime: roles, spawn requests and
// results, handles, and the Manager that spawns, limits, watches, cancels
// and resumes subagents, plus the orchestrator's tools that drive it.
//
// # Lifecycle
//
// A run moves pending → running → one final status (success, timeout,
// cost_exceeded, tokens_exceeded, iterations_exceeded, cancelled, error),
// or to interrupted when the process died while it ran (set at the next
// start by Manager.Start). Every change is a compare-and-set in the store
// (store.TransitionRun), so when Cancel races completion exactly one wins:
// if the loop finished first the run keeps its result; if the cancel came
// first the run is cancelled and whatever the loop would still have
// produced is discarded: it never reaches the parent. A finished run can
// be resumed with a follow-up message (Manager.Send), which moves it back
// to running with its conversation intact.
//
// # Events
//
// Each subagent publishes to its own session, "ava:subagent:S-xxxxxx",
// whose event stream exists from the moment the run is registered and is
// independent of its parent's. The parent's session receives only
// SubagentSpawn (published when Spawn returns) and SubagentComplete.
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

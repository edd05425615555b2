// Package lifecycle is the one definition of a subagent run's lifecycle:
// its statuses and the transitions allowed between them. The agent loop
// ends a run in one of these statuses, the subagent manager moves runs
// along the table, and the store refuses any write the table does not
// allow, so a status can never go backwards (a finished run is never
// pending again) whoever writes it.
//
//	queued ──▶ pending ──▶ running ──▶ final
//	   │          │                      │
//	   └──────────┴──────▶ final         └──▶ running | queued (a follow-up)
//
// The final statuses are success, timeout, cost_exceeded, tokens_exceeded,
// iterations_exceeded, cancelled, error and interrupted.
//
// A run resumed after its process died (docs/ownership.md, "Takeover")
// makes no move in this table: it stays running (or queued) and only its
// owner changes, so a recovered run is never interrupted and then running
// again, and nothing in between reports it ended.
package lifecycle

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Status is how a run stands or how it ended.
type Status string

// Statuses. Queued, Pending and Running are active; the others are final.
const (
	// Queued is a run waiting for a free concurrency slot.
	Queued Status = "queued"
	// Pending is a run that is registered and about to start.
	Pending Status = "pending"
	// Running is a run whose agent loop runs.
	Running            Status = "running"
	Success            Status = "success"
	Timeout            Status = "timeout"
	CostExceeded       Status = "cost_exceeded"
	TokensExceeded     Status = "tokens_exceeded"
	IterationsExceeded Status = "iterations_exceeded"
	Cancelled          Status = "cancelled"
	Error              Status = "error"
	// Interrupted marks a run whose process stopped while it was active.
	Interrupted Status = "interrupted"
)

// All lists every status, active ones first.
var All = []Status{Queued, Pending, Running, Success, Timeout, CostExceeded,
	TokensExceeded, IterationsExceeded, Cancelled, Error, Interrupted}

// Active lists the statuses of a run that has not ended.
var Active = []Status{Queued, Pending, Running}

// ErrInvalidTransition is wrapped by every refused status change.
var ErrInvalidTransition = errors.New("invalid status transition")

// Valid reports whether s is a status.
func (s Status) Valid() bool { return slices.Contains(All, s) }

// Final reports whether s is a status a run ends in.
func (s Status) Final() bool { return s.Valid() && !slices.Contains(Active, s) }

// IsActive reports whether s is the status of a run that has not ended.
func (s Status) IsActive() bool { return slices.Contains(Active, s) }

// Parse returns the status named s, or an error listing the statuses.
func Parse(s string) (Status, error) {
	st := Status(s)
	if !st.Valid() {
		return "", fmt.Errorf("status %q is not one of %s", s, Names())
	}
	return st, nil
}

// Names lists the statuses comma-separated, for messages and help texts.
func Names() string {
	names := make([]string, len(All))
	for i, s := range All {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// CanMove reports whether a run may move from one status to another: the
// table every writer obeys. From an active status a run moves forward
// (queued → pending → running) or ends; a finished run only moves back to
// running or queued, when a follow-up resumes it. Nothing moves to itself.
func CanMove(from, to Status) bool {
	if !from.Valid() || !to.Valid() || from == to {
		return false
	}
	switch from {
	case Queued:
		return to == Pending || to == Running || to.Final()
	case Pending:
		return to == Running || to.Final()
	case Running:
		return to.Final()
	}
	return to == Running || to == Queued
}

// Check returns nil when CanMove(from, to). An unknown status gets a plain
// error naming it; an edge the table refuses gets an error wrapping
// ErrInvalidTransition that names both statuses.
func Check(from, to Status) error {
	if CanMove(from, to) {
		return nil
	}
	for _, s := range []Status{from, to} {
		if _, err := Parse(string(s)); err != nil {
			return err
		}
	}
	return fmt.Errorf("a run cannot move from %s to %s: %w", from, to, ErrInvalidTransition)
}

// Seed 002's words for how a subagent ended (the agent_event line's
// status), with the precise cause beside them (its reason).
const (
	SeedCompleted = "completed"
	SeedFailed    = "failed"
	SeedAborted   = "aborted"
)

// seedReasons are the reasons of the final statuses that are not
// success, in the agent_event line.
var seedReasons = map[Status]string{
	Timeout: "timeout", CostExceeded: "over_budget", TokensExceeded: "token_limit",
	IterationsExceeded: "iteration_limit", Error: "error", Cancelled: "cancelled", Interrupted: "interrupted",
}

// Seed returns how a final status reads in seed 002's agent_event line:
// completed, failed or aborted (stopped by a person or by the process's
// end), and the precise cause ("" for success). An active status has no
// seed word: both are "".
func (s Status) Seed() (status, reason string) {
	switch s {
	case Success:
		return SeedCompleted, ""
	case Cancelled, Interrupted:
		return SeedAborted, seedReasons[s]
	}
	if r, ok := seedReasons[s]; ok {
		return SeedFailed, r
	}
	return "", ""
}

// FromSeed reads a status back from an agent_event line: seed 002's
// word and its reason, or Ava's own status word (lines written before
// the seed's words were used).
func FromSeed(status, reason string) Status {
	switch status {
	case SeedCompleted:
		return Success
	case SeedFailed, SeedAborted:
		for s, r := range seedReasons {
			if r == reason {
				return s
			}
		}
		if status == SeedAborted {
			return Cancelled
		}
		return Error
	}
	return Status(status)
}

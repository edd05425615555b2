package audit

import (
	"fmt"
	"os"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

// Deliver makes SessionLogs a sink of the event hub, the only writer of
// the session files: a parent session's SubagentQueued, SubagentSpawn,
// SubagentResumed and SubagentComplete events become its subagent:queued,
// subagent:start, subagent:resumed and subagent:complete|error|aborted
// entries, synced before Deliver
// returns (so before the event reaches anyone, and an end entry before
// the result is delivered to the parent). Other events are ignored.
func (s *SessionLogs) Deliver(ev event.Event) error {
	e, ok, err := LifecycleEntryOf(ev)
	if !ok {
		return err
	}
	if err := s.Append(ev.Session, e); err != nil {
		return fmt.Errorf("lifecycle entry of %s %s: %w", ev.Type, e.JobID, err)
	}
	return nil
}

var _ event.Sink = (*SessionLogs)(nil)

// LifecycleEntryOf is the lifecycle entry an event stands for, and
// whether it stands for one.
func LifecycleEntryOf(ev event.Event) (LifecycleEntry, bool, error) {
	switch ev.Type {
	case event.SubagentQueued, event.SubagentSpawn, event.SubagentResumed:
		var c event.SubagentSpawnContent
		if err := ev.Decode(&c); err != nil {
			return LifecycleEntry{}, false, fmt.Errorf("lifecycle entry of %s: %w", ev.Type, err)
		}
		typ := SubagentStart
		switch ev.Type {
		case event.SubagentQueued:
			typ = SubagentQueued
		case event.SubagentResumed:
			typ = SubagentResumed
		}
		return LifecycleEntry{EventType: typ, JobID: c.SubagentID, RequestedBy: ev.User, AgentName: c.Role,
			Mode: Mode(c.Mode), PID: os.Getpid(), StartedAt: ev.Time, Model: c.Model, Attempt: c.Attempt, Summary: c.Summary}, true, nil
	case event.SubagentComplete:
		var c event.SubagentCompleteContent
		if err := ev.Decode(&c); err != nil {
			return LifecycleEntry{}, false, fmt.Errorf("lifecycle entry of %s: %w", ev.Type, err)
		}
		return completeEntry(ev, c), true, nil
	}
	return LifecycleEntry{}, false, nil
}

// completeEntry is the end entry of a SubagentComplete event: its type
// follows the status; only a large output goes to a file with a pointer
// in the entry (seed 002: keep entries small).
func completeEntry(ev event.Event, c event.SubagentCompleteContent) LifecycleEntry {
	typ := SubagentComplete
	switch c.Status {
	case lifecycle.Success:
	case lifecycle.Cancelled, lifecycle.Interrupted:
		typ = SubagentAborted
	default:
		typ = SubagentError
	}
	start := c.StartedAt
	if start.IsZero() {
		start = ev.Time.Add(-time.Duration(c.DurationMs) * time.Millisecond)
	}
	e := LifecycleEntry{EventType: typ, JobID: c.SubagentID, RequestedBy: ev.User, AgentName: c.Role, Mode: Mode(c.Mode),
		PID: os.Getpid(), StartedAt: start, CompletedAt: ev.Time, Model: c.Model, Status: c.Status, Summary: c.Summary,
		Usage: Usage{Input: c.InputTokens, Output: c.OutputTokens, CacheRead: c.CacheReadTokens,
			CacheWrite: c.CacheWriteTokens, Cost: Cost{Total: c.CostCents / 100}}, Attempt: c.Attempt}
	if c.OutputFormat != "none" && len(c.Output) > MaxInlineSummary {
		e.Output = string(c.Output)
	}
	return e
}

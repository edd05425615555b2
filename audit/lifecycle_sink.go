package audit

import (
	"errors"
	"fmt"
	"io/fs"
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

// DeliverBatch makes SessionLogs an event.BatchSink: the entries of evs
// (events one commit stored, in order) are written as Deliver writes
// them, but the lines of one session's consecutive entries with one
// write and one fsync. It returns each event's error.
func (s *SessionLogs) DeliverBatch(evs []event.Event) []error {
	errs := make([]error, len(evs))
	var b lineBatch
	for i, ev := range evs {
		e, ok, err := LifecycleEntryOf(ev)
		if !ok {
			errs[i] = err
			continue
		}
		l, err := s.Session(ev.Session)
		if err == nil && b.log != nil && b.log != l {
			b.flush(errs)
		}
		var line []byte
		if err == nil {
			line, err = l.line(e)
		}
		if err != nil {
			errs[i] = fmt.Errorf("lifecycle entry of %s %s: %w", ev.Type, e.JobID, err)
			continue
		}
		b.add(l, line, i, fmt.Sprintf("lifecycle entry of %s %s", ev.Type, e.JobID))
	}
	b.flush(errs)
	return errs
}

// lineBatch gathers lines bound for one session's file.
type lineBatch struct {
	log   *SessionLog
	lines []byte
	idx   []int    // the events the lines stand for
	what  []string // each one's name for its error
}

// add adds an event's line.
func (b *lineBatch) add(l *SessionLog, line []byte, i int, what string) {
	b.log = l
	b.lines = append(b.lines, line...)
	b.idx = append(b.idx, i)
	b.what = append(b.what, what)
}

// flush writes the gathered lines with one write and one fsync and sets
// each of their events' error.
func (b *lineBatch) flush(errs []error) {
	if len(b.idx) > 0 {
		if err := b.log.appendLines(b.lines); err != nil {
			for k, i := range b.idx {
				errs[i] = fmt.Errorf("%s: %w", b.what[k], err)
			}
		}
	}
	*b = lineBatch{}
}

var _ event.BatchSink = (*SessionLogs)(nil)

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
	typ := SubagentError
	switch word, _ := c.Status.Seed(); word {
	case lifecycle.SeedCompleted:
		typ = SubagentComplete
	case lifecycle.SeedAborted:
		typ = SubagentAborted
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

// EnsureEntries writes the lifecycle entries of evs that their session
// files do not hold yet (an entry of the same type for the same job), in
// order, each file scanned once. A process that died may have stored an
// event (a subagent's SubagentSpawn, published without waiting) and not
// yet written its entry; recovery calls this for the runs it takes over
// or ends, before their next entries, so that no entry is lost. Events
// that stand for no entry are ignored.
func (s *SessionLogs) EnsureEntries(evs []event.Event) error {
	bySession := map[string][]LifecycleEntry{}
	var order []string
	for _, ev := range evs {
		e, ok, err := LifecycleEntryOf(ev)
		if err != nil {
			return err
		}
		if !ok || ev.Session == "" {
			continue
		}
		if _, seen := bySession[ev.Session]; !seen {
			order = append(order, ev.Session)
		}
		bySession[ev.Session] = append(bySession[ev.Session], e)
	}
	for _, session := range order {
		l, err := s.Session(session)
		if err != nil {
			return err
		}
		have := map[[2]string]bool{}
		err = ScanLifecycle(l.Path(), func(e LifecycleEntry) error {
			have[[2]string{e.JobID, string(e.EventType)}] = true
			return nil
		}, nil)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("ensure lifecycle entries of %s: %w", session, err)
		}
		for _, e := range bySession[session] {
			k := [2]string{e.JobID, string(e.EventType)}
			if have[k] {
				continue
			}
			if err := l.Append(e); err != nil {
				return fmt.Errorf("ensure lifecycle entry %s of %s: %w", e.EventType, e.JobID, err)
			}
			have[k] = true
		}
	}
	return nil
}

package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
)

// processStart is when this process started: without an Owner, a turn
// that started before it and never ended belongs to a process that is
// gone.
var processStart = time.Now()

// InterruptedNote is the orchestrator message stored in the history
// after the person's message of a turn that never ended (its process was
// killed), so that the conversation says the request got no answer.
const InterruptedNote = "[This turn was interrupted: Ava stopped before answering the message above (status interrupted). Nothing of the turn's work was kept but the results its subagents announced.]"

// Pages of the stream read back to find the session's last turn: a
// short one first (the last turn's end is usually among the last
// events), then longer ones.
const (
	turnScanFirst = 32
	turnScanPage  = 256
	turnScanPages = 16
)

// endInterrupted is EndInterrupted at the start of a turn: failures are
// logged, and the new turn goes on.
func (o *Orchestrator) endInterrupted(ctx context.Context, session, user string) {
	if _, err := o.EndInterrupted(ctx, session); err != nil {
		o.log.Error("end an interrupted turn", "session", session, "err", err)
	}
}

// endAttempts bounds how often EndInterrupted looks at the stream again
// when it moved between the look and the end's append.
const endAttempts = 4

// EndInterrupted ends the session's last turn if it started and never
// ended, and its process is gone (killed while it ran): a SessionEnd with
// status interrupted in the stream, and InterruptedNote in the history.
// A turn another live process runs is left alone. It reports whether it
// ended one. Call it only while no turn of the session runs in this
// process (before a turn, or when a daemon starts).
//
// Several processes may find the same dead turn at once (two daemons
// starting together): the SessionEnd is a compare-and-append on the
// stream as it was read (event.Fence.Follows), so the first to append
// ends the turn and the others, refused, look again, find it ended and
// write nothing (no second SessionEnd, no second note).
func (o *Orchestrator) EndInterrupted(ctx context.Context, session string) (bool, error) {
	if o.cfg.Events == nil {
		return false, nil
	}
	for attempt := 1; ; attempt++ {
		start, last, open, err := o.lastTurn(ctx, session)
		if err != nil {
			return false, fmt.Errorf("find the last turn of %s: %w", session, err)
		}
		if !open || !o.ownerGone(ctx, start) {
			return false, nil
		}
		var c event.SessionContent
		_ = json.Unmarshal(start.Content, &c)
		end := o.stamp(session, start.User, event.New(event.SessionEnd, event.SessionContent{Status: lifecycle.Interrupted,
			Model: c.Model, Offline: c.Offline, Instance: c.Instance}))
		end.Fence = event.Fence{Follows: last}
		_, err = o.cfg.Hub.Publish(end)
		if errors.Is(err, event.ErrFenced) && attempt < endAttempts {
			continue // the stream moved on since it was read: look again
		}
		if err != nil {
			return false, fmt.Errorf("end the interrupted turn of %s: %w", session, err)
		}
		o.log.Warn("a turn of the session never ended (its process stopped); it ended as interrupted", "session", session,
			"seq", start.Seq, "started", start.Time, "instance", c.Instance)
		break
	}
	if o.cfg.History == nil {
		return true, nil
	}
	note := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(InterruptedNote)}}
	if err := o.cfg.History.Save(ctx, session, []llm.Message{note}); err != nil {
		return true, fmt.Errorf("record the interrupted turn of %s in the history: %w", session, err)
	}
	return true, nil
}

// lastTurn finds the session's last orchestrator SessionStart or
// SessionEnd, reading the stream back from its end a page at a time;
// last is the stream's last number as read, and open reports that the
// last one is a SessionStart.
func (o *Orchestrator) lastTurn(ctx context.Context, session string) (ev event.Event, last uint64, open bool, err error) {
	last, err = o.cfg.Events.LastSeq(ctx, session)
	if err != nil {
		return event.Event{}, 0, false, err
	}
	upTo := last
	for page := range turnScanPages {
		if upTo == 0 {
			break
		}
		size := uint64(turnScanPage)
		if page == 0 {
			size = turnScanFirst
		}
		from := upTo - min(upTo, size)
		evs, err := o.cfg.Events.ReadEvents(ctx, session, from, int(size))
		if err != nil {
			return event.Event{}, 0, false, err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			ev := evs[i]
			if ev.Seq > upTo || ev.Agent != event.OrchestratorID {
				continue
			}
			switch ev.Type {
			case event.SessionStart:
				return ev, last, true, nil
			case event.SessionEnd:
				return ev, last, false, nil
			}
		}
		upTo = from
	}
	return event.Event{}, last, false, nil
}

// ownerGone reports whether the process that started a turn is gone. A
// turn this instance started is over: this process runs one turn of a
// session at a time, and is starting one now.
func (o *Orchestrator) ownerGone(ctx context.Context, start event.Event) bool {
	var c event.SessionContent
	_ = json.Unmarshal(start.Content, &c)
	if o.cfg.Owner == nil || c.Instance == "" {
		return start.Time.Before(processStart)
	}
	if c.Instance == o.cfg.Owner.ID() {
		return true
	}
	gone, err := o.cfg.Owner.Gone(ctx, []string{c.Instance})
	if err != nil {
		o.log.Error("is a turn's process gone", "instance", c.Instance, "err", err)
		return false
	}
	return len(gone) > 0
}

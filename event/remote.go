package event

import (
	"context"
	"fmt"
	"slices"
)

// Events published by other processes sharing the Log. A process's live
// subscribers read its journals in memory; for them to see what another
// process publishes live, something outside the hub (store/postgres's
// Relay) tells the hub what the others stored (Stored) and hands it their
// live-only events (Live), and takes this process's live-only events to
// the others (SetRelay).

// SetRelay makes the hub call fn with every live-only event published in
// this process, as its subscribers see it (masked: streamed text as the
// journal releases it), in order per session. fn is called with the
// session's journal locked: it must not block and must not publish. nil
// removes the relay. Without a relay the cost is one nil check per
// live-only event.
func (h *Hub) SetRelay(fn func(Event)) {
	if fn == nil {
		h.relay.Store(nil)
		return
	}
	h.relay.Store(&fn)
}

// Sessions lists the sessions whose journals are in memory.
func (h *Hub) Sessions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.journals))
	for s := range h.journals {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Stored tells the hub that another process stored the session's kept
// events up to number last (0: not known, as after a lost connection).
// When the session's journal is in memory and does not have them yet,
// they are read from the Log and appended to it, as stored (already
// masked), waking its subscribers. Nothing is read when the journal
// already has last (this process's own events) or when nobody reads it
// live yet, and no journal is created. The Log is read without holding a
// lock; an error is returned when it cannot be read.
func (h *Hub) Stored(session string, last uint64) error {
	h.mu.Lock()
	j, ok := h.journals[session]
	h.mu.Unlock()
	if !ok {
		return nil
	}
	return j.catchUp(last)
}

// Live appends a live-only event published by another process (already
// masked there) to its session's journal if it is in memory, waking the
// subscribers that have caught up. Kept events are ignored (see Stored).
func (h *Hub) Live(ev Event) {
	if ev.Type.Kept() {
		return
	}
	h.mu.Lock()
	j, ok := h.journals[ev.Session]
	h.mu.Unlock()
	if !ok {
		return
	}
	ev.Seq = 0
	j.mu.Lock()
	defer j.unlock()
	j.appendLocked(ev)
}

// storedOwn records that this process stored the journal's events up to
// last: their notifications need no Log read, Publish appends them. Only
// a hub with a relay hears of other processes, so only it keeps count.
func (j *Journal) storedOwn(last uint64) {
	if j.hub.relay.Load() == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.own = max(j.own, last)
}

// anchorLocked records that a subscription with cursor after attached at
// the end of the window: events stored after it must be caught up here.
// With kept entries, catching up starts after the last one, which is at
// most after; without, after the lowest such cursor. j.mu is held.
func (j *Journal) anchorLocked(after uint64) {
	if !j.anchored || after < j.floor {
		j.floor = after
	}
	j.anchored = true
}

// catchUp appends the events stored after what the journal has, up to
// last (0: all there are), reading the Log in batches.
func (j *Journal) catchUp(last uint64) error {
	for {
		from, ok := j.catchUpFrom(last)
		if !ok {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
		evs, err := j.hub.log.ReadEvents(ctx, j.session, from, replayBatch)
		cancel()
		if err != nil {
			return fmt.Errorf("catch up %s after #%d: %w", j.session, from, err)
		}
		j.appendStored(evs)
		if len(evs) < replayBatch {
			return nil
		}
	}
}

// catchUpFrom records last as reported and returns the number after which
// the Log is to be read, or false when there is nothing to read: the
// journal has last already, or is to have it from this process's
// publisher, or has neither kept events nor subscribers attached to it.
func (j *Journal) catchUpFrom(last uint64) (uint64, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.notified = max(j.notified, last)
	if last != 0 && (last <= j.last || last <= j.own) {
		return 0, false
	}
	if j.last > 0 {
		return j.last, true
	}
	return j.floor, j.anchored
}

// appendStored appends the events read from the Log that are newer than
// the journal's last, as they are (masked when they were published).
func (j *Journal) appendStored(evs []Event) {
	j.mu.Lock()
	defer j.unlock()
	for _, ev := range evs {
		if ev.Seq > j.last {
			j.appendLocked(ev)
		}
	}
}

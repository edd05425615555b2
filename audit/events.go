package audit

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/avaagent/ava/event"
)

// EventSource is a store holding the events of every process of a
// cluster (the PostgreSQL store's events table). A [Reader] given one in
// ReaderOptions.Events reads its audit entries there instead of in the
// data root's files, so that it shows the whole cluster, not one machine.
// A stored event's line is the event's JSON form, the same bytes the
// [Writer] writes for it.
type EventSource interface {
	// AuditEvents returns up to p.Limit stored events matching p, in p's
	// order.
	AuditEvents(ctx context.Context, p EventPage) ([]StoredEvent, error)
	// EventCursor returns a position in the stream of stored events such
	// that every event before it is stored for good (committed, or never
	// to be) and every event stored later is at or after it. It never
	// goes back.
	EventCursor(ctx context.Context) (uint64, error)
	// Agents returns the distinct agent IDs with stored events that start
	// with prefix, sorted, at most limit of them.
	Agents(ctx context.Context, prefix string, limit int) ([]string, error)
	// Where names the store in messages, never with a password.
	Where() string
}

// EventPage selects stored events for [EventSource.AuditEvents]. Zero
// fields do not filter.
type EventPage struct {
	// Types are the event types wanted (any of them).
	Types   []event.Type
	Agent   string
	Session string
	// Since and Until bound the stored time (nanoseconds), inclusive.
	Since, Until time.Time
	// From and To bound the events' cursor positions (see
	// EventSource.EventCursor): From <= position < To; To 0 is no bound.
	From, To uint64
	// After, when set, starts the page after this key in the page's
	// order (keyset paging).
	After *EventKey
	// Desc orders the page newest first; the default is oldest first.
	Desc bool
	// Limit is the page size (0: all).
	Limit int
}

// EventKey is a stored event's place in the order of an [EventSource]:
// by time, then by the order in which events were stored.
type EventKey struct {
	// Time is the event's time in Unix nanoseconds.
	Time int64
	// ID increases with each event stored.
	ID int64
}

// StoredEvent is one event read from an [EventSource].
type StoredEvent struct {
	Key     EventKey
	Session string
	Seq     uint64
	// Line is the event's JSON form as stored.
	Line []byte
}

// eventPageSize is how many stored events a reader asks for at once.
const eventPageSize = 500

// maxResolved is how many agents ResolveSubagent asks for: enough to say
// which ones an ambiguous prefix matches.
const maxResolved = 20

// storedLabel names a stored event in an Entry or a Skip: its File is
// "events/<session>" and its Line the event's sequence number.
func storedLabel(session string) string { return "events/" + session }

// pageOf is the part of q that the store filters on. The stored time has
// nanoseconds while a line's timestamp (which the matcher compares) has
// milliseconds, so the bounds are widened to the millisecond that
// contains them: the store never drops an entry the matcher would keep.
func pageOf(q Query) EventPage {
	p := EventPage{Agent: q.Agent, Session: q.Session, Types: q.Types, Limit: eventPageSize}
	if len(p.Types) == 0 {
		p.Types = event.AuditTypes
	}
	if !q.Since.IsZero() {
		p.Since = q.Since.Truncate(time.Millisecond)
	}
	if !q.Until.IsZero() {
		p.Until = q.Until.Truncate(time.Millisecond).Add(time.Millisecond - 1)
	}
	return p
}

// storedEntry decodes and matches one stored event.
func storedEntry(se StoredEvent, m *matcher, onSkip func(Skip)) (Entry, bool) {
	raw := se.Line
	if looksWhole(raw) && !m.prefilter(raw) {
		return Entry{}, false
	}
	ls := lineScan{path: storedLabel(se.Session), onSkip: onSkip}
	ev, ok := ls.decode(raw, int(se.Seq), true)
	if !ok || !m.match(ev) {
		return Entry{}, false
	}
	return Entry{Event: ev, Raw: raw, File: storedLabel(se.Session), Line: int(se.Seq)}, true
}

// scanStored calls keep with each stored event of p matching m, page by
// page, until keep returns false or the events run out.
func (r *Reader) scanStored(ctx context.Context, p EventPage, m *matcher, onSkip func(Skip), keep func(Entry) bool) error {
	for {
		rows, err := r.events.AuditEvents(ctx, p)
		if err != nil {
			return fmt.Errorf("read audit events from %s: %w", r.events.Where(), err)
		}
		for _, se := range rows {
			if e, ok := storedEntry(se, m, onSkip); ok && !keep(e) {
				return nil
			}
		}
		if p.Limit == 0 || len(rows) < p.Limit {
			return nil
		}
		p.After = &rows[len(rows)-1].Key
	}
}

// queryEvents is query on the event source: like a missing trace file,
// a subagent with no stored event is an error wrapping fs.ErrNotExist.
func (r *Reader) queryEvents(ctx context.Context, q Query, keepRaw bool) ([]Entry, []Skip, error) {
	if IsSubagentID(q.Agent) {
		if err := r.hasStoredAgent(ctx, q.Agent); err != nil {
			return nil, nil, err
		}
	}
	var sk skipList
	out, err := r.queryStored(ctx, q, pageOf(q), keepRaw, sk.add)
	return out, sk.result(), err
}

// queryStored is query on the event source: oldest first, or, with a
// limit, newest first until Limit entries are found.
func (r *Reader) queryStored(ctx context.Context, q Query, p EventPage, keepRaw bool, onSkip func(Skip)) ([]Entry, error) {
	m := newMatcher(q)
	p.Desc = q.Limit > 0
	var out []Entry
	err := r.scanStored(ctx, p, m, onSkip, func(e Entry) bool {
		if !keepRaw {
			e.Raw = nil
		}
		out = append(out, e)
		return q.Limit == 0 || len(out) < q.Limit
	})
	if p.Desc {
		slices.Reverse(out)
	}
	return out, err
}

// hasStoredAgent fails, wrapping fs.ErrNotExist as a missing trace file
// does, when no event of the subagent id is stored.
func (r *Reader) hasStoredAgent(ctx context.Context, id string) error {
	found, err := r.events.Agents(ctx, id, 1)
	if err != nil {
		return fmt.Errorf("trace of %s in %s: %w", id, r.events.Where(), err)
	}
	if len(found) == 0 || found[0] != id {
		return fmt.Errorf("subagent %s has no events in %s: %w", id, r.events.Where(), fs.ErrNotExist)
	}
	return nil
}

// followStored is FollowEntries on the event source. It takes a cursor,
// delivers the history stored before it, then polls for the events
// stored from it on, so history and live events meet without a gap or a
// duplicate. Each poll's events are delivered by time.
func (r *Reader) followStored(ctx context.Context, q Query, fn func(Entry) error) error {
	cur, err := r.events.EventCursor(ctx)
	if err != nil {
		return r.followErr(ctx, err)
	}
	if err := r.storedHistory(ctx, q, cur, fn); err != nil {
		return r.followErr(ctx, err)
	}
	m := newMatcher(q)
	ticker := time.NewTicker(r.poll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		next, err := r.events.EventCursor(ctx)
		if err != nil {
			return r.followErr(ctx, err)
		}
		if next <= cur {
			continue
		}
		p := pageOf(q)
		p.From, p.To = cur, next
		var ferr error
		err = r.scanStored(ctx, p, m, r.onSkip, func(e Entry) bool {
			ferr = fn(e)
			return ferr == nil
		})
		if ferr != nil {
			return ferr
		}
		if err != nil {
			return r.followErr(ctx, err)
		}
		cur = next
	}
}

// storedHistory delivers what Follow shows first (see Follow), from the
// events stored before cur. As with the files, a daily history without
// q.Since reaches back only to the start of today (UTC).
func (r *Reader) storedHistory(ctx context.Context, q Query, cur uint64, fn func(Entry) error) error {
	if q.Limit == 0 && q.Since.IsZero() {
		return nil
	}
	if q.Since.IsZero() && !IsSubagentID(q.Agent) {
		q.Since = r.clock().UTC().Truncate(24 * time.Hour)
	}
	p := pageOf(q)
	p.To = cur
	hist, err := r.queryStored(ctx, q, p, true, r.onSkip)
	if err != nil {
		return err
	}
	for _, e := range hist {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// followErr is nil once ctx is done (following stops quietly), else err.
func (r *Reader) followErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("follow audit events in %s: %w", r.events.Where(), err)
}

// resolveStored is ResolveSubagent on the event source.
func (r *Reader) resolveStored(ctx context.Context, prefix, p string) (string, error) {
	found, err := r.events.Agents(ctx, p, maxResolved)
	if err != nil {
		return "", fmt.Errorf("list subagents in %s: %w", r.events.Where(), err)
	}
	found = slices.DeleteFunc(found, func(id string) bool { return !IsSubagentID(id) })
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no subagent trace matches %q in %s", ErrUnknownSubagent, prefix, r.events.Where())
	case 1:
		return found[0], nil
	}
	return "", ambiguous(prefix, found)
}

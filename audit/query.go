package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/avaagent/ava/event"
)

// Query selects audit entries. Zero fields do not filter.
type Query struct {
	// Agent is "ava" or a subagent ID. A subagent ID makes the query read
	// only that subagent's trace file.
	Agent   string
	User    string
	Session string
	// Since and Until bound the entries' time, both inclusive. They also
	// limit which daily files are read.
	Since, Until time.Time
	Types        []event.Type
	// Search is a case-insensitive substring of the raw JSON line.
	Search string
	// Limit keeps only the last Limit matching entries (0: all); memory
	// stays bounded by Limit.
	Limit int
}

// Validate reports a query that can match nothing by mistake.
func (q Query) Validate() error {
	if q.Limit < 0 {
		return fmt.Errorf("query: negative limit %d", q.Limit)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return fmt.Errorf("query: until (%s) is before since (%s)", q.Until.UTC().Format(event.TimeLayout), q.Since.UTC().Format(event.TimeLayout))
	}
	for _, t := range q.Types {
		if !t.IsAudit() {
			return fmt.Errorf("query: %q is not an audit event type", t)
		}
	}
	return nil
}

// ReaderOptions configures a [Reader].
type ReaderOptions struct {
	// Clock tells Follow which day's file is current (default time.Now).
	Clock func() time.Time
	// PollInterval is how often Follow looks for new lines (default 200ms).
	PollInterval time.Duration
	// OnSkip receives the lines Follow skips (default: logged at Warn).
	OnSkip func(Skip)
	// Logger is used for the default OnSkip (default slog.Default()).
	Logger *slog.Logger
	// Events, when set, is where the reader finds audit entries instead
	// of the data root's files: a store shared by a cluster, whose events
	// are those of every process (see [EventSource]).
	Events EventSource
}

// Reader queries and follows the audit logs of a data root, or, given
// ReaderOptions.Events, the audit events of a cluster's store: the same
// queries, entries and output either way. It keeps no state between calls
// and starts no goroutines; it is safe for concurrent use.
type Reader struct {
	root   string
	events EventSource
	clock  func() time.Time
	poll   time.Duration
	onSkip func(Skip)
	// opened, when set (tests), sees every file a query or follow opens.
	opened func(path string)
}

// NewReader returns a reader of the logs under root.
func NewReader(root string, opts ReaderOptions) *Reader {
	r := &Reader{root: root, events: opts.Events, clock: opts.Clock, poll: cmpOr(opts.PollInterval, DefaultSyncInterval), onSkip: opts.OnSkip}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.onSkip == nil {
		log := cmpOrPtr(opts.Logger, slog.Default()).With("component", "audit")
		r.onSkip = func(s Skip) { log.Warn("skipped audit log line", "file", s.File, "line", s.Line, "reason", s.Reason) }
	}
	return r
}

// Stored reports whether the reader reads a store's events
// (ReaderOptions.Events) rather than the data root's files.
func (r *Reader) Stored() bool { return r.events != nil }

// Where names what the reader reads: the data root's log directory, or
// the store of its events.
func (r *Reader) Where() string {
	if r.events != nil {
		return "the events of " + r.events.Where()
	}
	return LogDir(r.root)
}

// Files returns the files q reads (none when the reader reads a store's
// events), oldest first: the trace of q.Agent when
// it is a subagent ID (an error wrapping fs.ErrNotExist when there is
// none), otherwise the daily files whose dates overlap [Since, Until].
func (r *Reader) Files(q Query) ([]string, error) {
	if r.events != nil {
		return nil, nil
	}
	if IsSubagentID(q.Agent) {
		p := TracePath(r.root, q.Agent)
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("subagent %s has no trace (looked for %s): %w", q.Agent, p, fs.ErrNotExist)
			}
			return nil, fmt.Errorf("trace of %s: %w", q.Agent, err)
		}
		return []string{p}, nil
	}
	names, err := os.ReadDir(LogDir(r.root))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list audit logs: %w", err)
	}
	var first, last string
	if !q.Since.IsZero() {
		first = q.Since.UTC().Format(dayLayout)
	}
	if !q.Until.IsZero() {
		last = q.Until.UTC().Format(dayLayout)
	}
	var files []string
	for _, de := range names {
		day, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if !ok || de.IsDir() {
			continue
		}
		if _, err := time.Parse(dayLayout, day); err != nil {
			continue
		}
		if first != "" && day < first || last != "" && day > last {
			continue
		}
		files = append(files, dailyPathForDay(r.root, day))
	}
	slices.Sort(files)
	return files, nil
}

// Query returns the events matching q in file order (oldest first), the
// lines it skipped (at most 1000 listed, then one counting the rest), and
// an error if a file could not be read or ctx ended.
func (r *Reader) Query(ctx context.Context, q Query) ([]event.Event, []Skip, error) {
	entries, skips, err := r.query(ctx, q, false)
	evs := make([]event.Event, len(entries))
	for i, e := range entries {
		evs[i] = e.Event
	}
	return evs, skips, err
}

// Recent returns the last n events (all when n is 0) of an agent ("ava"
// or a subagent ID).
func (r *Reader) Recent(ctx context.Context, agentID string, n int) ([]event.Event, []Skip, error) {
	return r.Query(ctx, Query{Agent: agentID, Limit: n})
}

// Search is Query with q.Search set to text.
func (r *Reader) Search(ctx context.Context, text string, q Query) ([]event.Event, []Skip, error) {
	q.Search = text
	return r.Query(ctx, q)
}

// QueryEntries is Query returning entries, whose Raw lines are copies
// owned by the caller.
func (r *Reader) QueryEntries(ctx context.Context, q Query) ([]Entry, []Skip, error) {
	return r.query(ctx, q, true)
}

// query runs q, copying raw lines only when keepRaw.
func (r *Reader) query(ctx context.Context, q Query, keepRaw bool) ([]Entry, []Skip, error) {
	if err := q.Validate(); err != nil {
		return nil, nil, err
	}
	if r.events != nil {
		return r.queryEvents(ctx, q, keepRaw)
	}
	files, err := r.Files(q)
	if err != nil {
		return nil, nil, err
	}
	m := newMatcher(q)
	var sk skipList
	var out []Entry
	if q.Limit == 0 {
		for _, f := range files {
			err := r.scanFile(ctx, f, m, func(e Entry) { out = append(out, e.clone(nil, keepRaw)) }, sk.add)
			if err != nil {
				return out, sk.result(), err
			}
		}
		return out, sk.result(), nil
	}
	// Newest file first, stopping once Limit entries are found, so that
	// --last N usually reads only today's file.
	for i := len(files) - 1; i >= 0 && len(out) < q.Limit; i-- {
		ring := newRing(q.Limit-len(out), keepRaw)
		if err := r.scanFile(ctx, files[i], m, ring.push, sk.add); err != nil {
			return out, sk.result(), err
		}
		out = append(ring.items(), out...)
	}
	skips := sk.result()
	slices.SortStableFunc(skips, func(a, b Skip) int { return strings.Compare(a.File, b.File) })
	return out, skips, nil
}

// scanFile calls keep with each matching entry of one file.
func (r *Reader) scanFile(ctx context.Context, path string, m *matcher, keep func(Entry), onSkip func(Skip)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since it was listed
	}
	if err != nil {
		return fmt.Errorf("query audit log: %w", err)
	}
	defer f.Close()
	if r.opened != nil {
		r.opened(path)
	}
	ls := lineScan{path: path, final: true, onSkip: onSkip}
	_, err = ls.run(f, func(raw []byte, no int, complete bool) error {
		if no%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("query %s: %w", path, err)
			}
		}
		if looksWhole(raw) && !m.prefilter(raw) {
			return nil
		}
		ev, ok := ls.decode(raw, no, complete)
		if ok && m.match(ev) {
			keep(Entry{Event: ev, Raw: raw, File: path, Line: no})
		}
		return nil
	})
	return err
}

// looksWhole is a cheap structural test: an entry is one JSON object.
// Lines failing it are decoded (and so reported) even when the prefilter
// would have passed over them, so a torn or corrupt line is reported
// whatever the query.
func looksWhole(raw []byte) bool {
	return len(raw) >= 2 && raw[0] == '{' && raw[len(raw)-1] == '}'
}

// clone copies e's Raw into buf (reusing it) so e outlives the scan, or
// drops it when !keepRaw.
func (e Entry) clone(buf []byte, keepRaw bool) Entry {
	if !keepRaw {
		e.Raw = nil
		return e
	}
	e.Raw = append(buf[:0], e.Raw...)
	return e
}

// ring keeps the last n entries pushed.
type ring struct {
	buf     []Entry
	next    int
	full    bool
	keepRaw bool
}

func newRing(n int, keepRaw bool) *ring { return &ring{buf: make([]Entry, n), keepRaw: keepRaw} }

func (r *ring) push(e Entry) {
	slot := &r.buf[r.next]
	*slot = e.clone(slot.Raw, r.keepRaw)
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// items returns the kept entries, oldest first.
func (r *ring) items() []Entry {
	if !r.full {
		return slices.Clone(r.buf[:r.next])
	}
	return append(slices.Clone(r.buf[r.next:]), r.buf[:r.next]...)
}

// The mistakes ResolveSubagent reports, each wrapped with the details:
// what a person typed is no subagent ID, names none, or names several.
var (
	ErrBadSubagentID       = errors.New("not a subagent ID")
	ErrUnknownSubagent     = errors.New("no such subagent")
	ErrAmbiguousSubagentID = errors.New("ambiguous subagent ID")
)

// ResolveSubagent returns the subagent ID whose trace file name starts
// with prefix ("S-7f3", "7f3a2b", "s-7F3A2B"), or, reading a store's
// events, the subagent with stored events whose ID does; a malformed,
// unknown or ambiguous prefix is ErrBadSubagentID, ErrUnknownSubagent or
// ErrAmbiguousSubagentID.
func (r *Reader) ResolveSubagent(prefix string) (string, error) {
	return r.ResolveSubagentContext(context.Background(), prefix)
}

// ResolveSubagentContext is ResolveSubagent with a context for reading a
// store.
func (r *Reader) ResolveSubagentContext(ctx context.Context, prefix string) (string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !strings.HasPrefix(p, "s-") {
		p = "s-" + p
	}
	p = "S-" + p[2:]
	if IsSubagentID(p) {
		return p, nil
	}
	if len(p) > 8 || !IsSubagentID(p+strings.Repeat("0", 8-len(p))) {
		return "", fmt.Errorf("%w: %q (S- and six hex digits, e.g. S-7f3a2b)", ErrBadSubagentID, prefix)
	}
	if r.events != nil {
		return r.resolveStored(ctx, prefix, p)
	}
	des, err := os.ReadDir(TraceDir(r.root))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("list subagent traces: %w", err)
	}
	var found []string
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if ok && IsSubagentID(id) && strings.HasPrefix(id, p) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no subagent trace matches %q in %s", ErrUnknownSubagent, prefix, TraceDir(r.root))
	case 1:
		return found[0], nil
	}
	return "", ambiguous(prefix, found)
}

// ambiguous is ErrAmbiguousSubagentID listing what prefix matches.
func ambiguous(prefix string, found []string) error {
	return fmt.Errorf("%w: %q matches %s; give more characters", ErrAmbiguousSubagentID, prefix, strings.Join(found, ", "))
}

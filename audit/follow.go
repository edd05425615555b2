package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/avaagent/ava/event"
)

// rotationGrace is how long (by the reader's clock) Follow keeps reading
// the previous day's file after UTC midnight, for entries stamped just
// before midnight and written just after.
const rotationGrace = 10 * time.Second

// Follow calls fn with the entries matching q as they are appended, until
// ctx is done (then it returns nil) or fn or a read fails (then it returns
// that error). It polls every PollInterval and waits for a line's newline
// before reading it. It follows the trace of q.Agent when that is a
// subagent ID (waiting for the file to appear), otherwise the daily log,
// moving on to the new day's file at UTC midnight.
//
// It first delivers history, like tail -f: with q.Limit > 0 the last
// Limit matching entries, with q.Since the matching entries since then
// (both: the last Limit of those), with neither nothing. Daily history
// reaches back to earlier days only with q.Since. History and live
// entries meet without a gap or a duplicate. Skipped lines go to
// ReaderOptions.OnSkip.
//
// Reading a store's events (ReaderOptions.Events), it polls the store
// instead, by a cursor that only moves past events stored for good; the
// history is the same, and the events of each poll come by time.
func (r *Reader) Follow(ctx context.Context, q Query, fn func(event.Event) error) error {
	return r.FollowEntries(ctx, q, func(e Entry) error { return fn(e.Event) })
}

// FollowEntries is Follow with entries; Raw is valid only during fn.
func (r *Reader) FollowEntries(ctx context.Context, q Query, fn func(Entry) error) error {
	if err := q.Validate(); err != nil {
		return err
	}
	if r.events != nil {
		return r.followStored(ctx, q, fn)
	}
	m := newMatcher(q)
	tails, err := r.followStart(ctx, q, m, fn)
	if err != nil {
		return err
	}
	daily := !IsSubagentID(q.Agent)
	ticker := time.NewTicker(r.poll)
	defer ticker.Stop()
	for {
		for _, t := range tails {
			if err := t.poll(ctx, r, m, fn); err != nil {
				return err
			}
		}
		if daily {
			tails = r.rotate(tails)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// followStart delivers the history and returns the tails to poll,
// positioned after it.
func (r *Reader) followStart(ctx context.Context, q Query, m *matcher, fn func(Entry) error) ([]*tail, error) {
	now := r.clock()
	t := &tail{path: TracePath(r.root, q.Agent)}
	if !IsSubagentID(q.Agent) {
		t = &tail{path: DailyPath(r.root, now), day: now.UTC().Format(dayLayout)}
	}
	if q.Limit == 0 && q.Since.IsZero() {
		return []*tail{t}, t.seekEnd()
	}
	var past []string
	if t.day != "" && !q.Since.IsZero() {
		files, err := r.Files(Query{Since: q.Since, Until: q.Until})
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if f < t.path {
				past = append(past, f)
			}
		}
	}
	var hist []Entry
	var ring *ring
	keep := func(e Entry) { hist = append(hist, e.clone(nil, true)) }
	if q.Limit > 0 {
		ring = newRing(q.Limit, true)
		keep = ring.push
	}
	for _, f := range past {
		if err := r.scanFile(ctx, f, m, keep, r.onSkip); err != nil {
			return nil, err
		}
	}
	if err := t.poll(ctx, r, m, func(e Entry) error { keep(e); return nil }); err != nil {
		return nil, err
	}
	if ring != nil {
		hist = ring.items()
	}
	for _, e := range hist {
		if err := fn(e); err != nil {
			return nil, err
		}
	}
	return []*tail{t}, nil
}

// rotate starts following the new day's file once the clock passes UTC
// midnight, and drops the old one after rotationGrace.
func (r *Reader) rotate(tails []*tail) []*tail {
	now := r.clock()
	today := now.UTC().Format(dayLayout)
	last := tails[len(tails)-1]
	if today > last.day {
		last.dropAt = now.Add(rotationGrace)
		tails = append(tails, &tail{path: DailyPath(r.root, now), day: today})
	}
	kept := tails[:0]
	for _, t := range tails {
		if t.dropAt.IsZero() || now.Before(t.dropAt) {
			kept = append(kept, t)
		}
	}
	return kept
}

// tail is a followed file and how far it has been read.
type tail struct {
	path   string
	day    string // daily file's date; "" for a trace
	off    int64  // bytes of complete lines read
	line   int    // lines read
	dropAt time.Time
}

// poll reads the complete lines appended since the last poll.
func (t *tail) poll(ctx context.Context, r *Reader, m *matcher, fn func(Entry) error) error {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("follow %s: %w", t.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("follow %s: %w", t.path, err)
	}
	if fi.Size() < t.off { // truncated or replaced: start over
		t.off, t.line = 0, 0
	}
	if fi.Size() == t.off {
		return nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return fmt.Errorf("follow %s: %w", t.path, err)
	}
	if r.opened != nil {
		r.opened(t.path)
	}
	ls := lineScan{path: t.path, line: t.line, onSkip: r.onSkip}
	n, err := ls.run(f, func(raw []byte, no int, complete bool) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if looksWhole(raw) && !m.prefilter(raw) {
			return nil
		}
		if ev, ok := ls.decode(raw, no, complete); ok && m.match(ev) {
			return fn(Entry{Event: ev, Raw: raw, File: t.path, Line: no})
		}
		return nil
	})
	t.off += n
	t.line = ls.line
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// seekEnd positions t after the file's last complete line.
func (t *tail) seekEnd() error {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("follow %s: %w", t.path, err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var lines int
	var end int64
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		chunk := buf[:n]
		lines += bytes.Count(chunk, []byte{'\n'})
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			end = off + int64(i) + 1
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("follow %s: %w", t.path, err)
		}
	}
	t.off, t.line = end, lines
	return nil
}

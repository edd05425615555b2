package audit

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// run is the writer goroutine: it owns every open file.
func (w *Writer) run() {
	defer close(w.stopped)
	tick := time.NewTicker(w.syncInterval)
	defer tick.Stop()
	batch := make([]request, 0, 64)
	for {
		select {
		case req, ok := <-w.queue:
			if !ok {
				w.shutdown()
				return
			}
			var open bool
			batch, open = w.drain(append(batch[:0], req))
			w.handle(batch)
			clear(batch) // drop references to the lines
			if !open {
				w.shutdown()
				return
			}
		case <-tick.C:
			w.syncAll()
			w.closeIdle()
		}
	}
}

// drain adds whatever is already queued to batch, up to the batch limits.
// It reports false when the queue was closed.
func (w *Writer) drain(batch []request) ([]request, bool) {
	size := len(batch[0].line)
	for len(batch) < maxBatch && size < maxBatchBytes {
		select {
		case req, ok := <-w.queue:
			if !ok {
				return batch, false
			}
			batch = append(batch, req)
			size += len(req.line)
		default:
			return batch, true
		}
	}
	return batch, true
}

// handle writes one batch: one write call per file, then an fsync if a
// request in the batch waits for one, then the replies.
func (w *Writer) handle(batch []request) {
	now := w.clock()
	needSync := false
	for i := range batch {
		r := &batch[i]
		needSync = needSync || r.done != nil
		if r.line != nil {
			w.route(r, now)
		}
	}
	var errs []error
	for _, f := range w.touched {
		f.err = f.flush()
		errs = append(errs, f.err)
	}
	for i := range batch {
		errs = append(errs, batch[i].err)
	}
	clear(w.openErrs)
	if err := joinUnique(errs); err != nil {
		w.fail(err)
	} else if len(w.touched) > 0 {
		w.okSinceFail = true
	}
	if needSync {
		w.syncAll()
	}
	w.reply(batch)
	for _, f := range w.touched {
		f.err, f.inBatch = nil, false
	}
	w.touched = w.touched[:0]
	w.evictTraces()
}

// route opens the request's files and queues its line on each.
func (w *Writer) route(r *request, now time.Time) {
	f, err := w.file(w.daily, r.day, func() string { return dailyPathForDay(w.root, r.day) }, now)
	if err != nil {
		r.err = err
	} else {
		r.files[0] = f
		f.add(r.line)
	}
	if r.trace == "" {
		return
	}
	f, err = w.file(w.traces, r.trace, func() string { return TracePath(w.root, r.trace) }, now)
	if err != nil {
		r.err = errors.Join(r.err, err)
		return
	}
	r.files[1] = f
	f.add(r.line)
	f.ended = r.ends // a follow-up's events reopen it
}

func dailyPathForDay(root, day string) string { return filepath.Join(LogDir(root), day+".jsonl") }

// file returns the open file for key, opening it if needed. A file that
// fails to open is tried once per batch.
func (w *Writer) file(m map[string]*appendFile, key string, path func() string, now time.Time) (*appendFile, error) {
	f, ok := m[key]
	if !ok {
		if err, failed := w.openErrs[key]; failed {
			return nil, err
		}
		var err error
		if f, err = openAppend(path()); err != nil {
			err = fmt.Errorf("audit log %s: %w", key, err)
			w.openErrs[key] = err
			return nil, err
		}
		m[key] = f
	}
	if !f.inBatch {
		f.inBatch = true
		w.touched = append(w.touched, f)
	}
	f.lastUse = now
	return f, nil
}

// joinUnique joins the distinct non-nil errors (by message).
func joinUnique(errs []error) error {
	var out []error
	seen := map[string]bool{}
	for _, err := range errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// reply answers the requests that wait: with their own error, or the
// writer's error.
func (w *Writer) reply(batch []request) {
	for i := range batch {
		r := &batch[i]
		if r.done == nil {
			continue
		}
		err := r.err
		for _, f := range r.files {
			if f != nil && f.err != nil {
				err = errors.Join(err, f.err)
			}
		}
		if err == nil {
			err = w.stickyErr()
		}
		r.done <- err
	}
}

// syncAll fsyncs every written file. A clean fsync after a clean write
// clears the writer's error. With many dirty files (a burst of subagents,
// one trace each) one syncfs(2) replaces their fsyncs and the directory
// syncs of new ones; it has the same guarantee for them.
func (w *Writer) syncAll() {
	var all []*appendFile
	dirty := 0
	for _, m := range []map[string]*appendFile{w.daily, w.traces} {
		for _, f := range m {
			all = append(all, f)
			if f.dirty || f.newName {
				dirty++
			}
		}
	}
	var err error
	if dirty > syncfsAbove {
		err = syncFS(all)
	} else {
		err = w.syncEach(all)
	}
	if err != nil {
		w.fail(err)
		return
	}
	if w.okSinceFail {
		w.recovered()
	}
}

// syncfsAbove is the number of dirty files above which syncAll uses one
// syncfs instead of an fsync per file.
const syncfsAbove = 16

func (w *Writer) syncEach(all []*appendFile) error {
	var errs []error
	if err := syncNewNames(all...); err != nil {
		errs = append(errs, err)
	}
	for _, f := range all {
		if err := f.sync(); err != nil {
			if f.inBatch {
				f.err = errors.Join(f.err, err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeIdle closes daily files of past days (rotation at UTC midnight),
// traces whose run ended (just synced, so closing costs no fsync) and
// traces unused for a minute: a long-running daemon keeps open only the
// traces of runs that are going.
func (w *Writer) closeIdle() {
	now := w.clock()
	today := now.UTC().Format(dayLayout)
	for day, f := range w.daily {
		if day < today {
			w.closeFile(w.daily, day, f)
		}
	}
	for id, f := range w.traces {
		if f.ended || now.Sub(f.lastUse) > traceIdleClose {
			w.closeFile(w.traces, id, f)
		}
	}
}

// evictTraces keeps at most maxOpenTraces trace files open, closing the
// least recently used.
func (w *Writer) evictTraces() {
	for len(w.traces) > maxOpenTraces {
		var oldID string
		var old *appendFile
		for id, f := range w.traces {
			if old == nil || f.lastUse.Before(old.lastUse) {
				oldID, old = id, f
			}
		}
		w.closeFile(w.traces, oldID, old)
	}
}

func (w *Writer) closeFile(m map[string]*appendFile, key string, f *appendFile) {
	delete(m, key)
	if err := f.close(); err != nil {
		w.fail(err)
	}
}

// shutdown closes every file once the queue is drained.
func (w *Writer) shutdown() {
	for day, f := range w.daily {
		w.closeFile(w.daily, day, f)
	}
	for id, f := range w.traces {
		w.closeFile(w.traces, id, f)
	}
}

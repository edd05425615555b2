package files

import (
	"context"
	"errors"
	"path"
)

// batchSize is how many files of one folder travel together from the
// walker to a worker: one channel operation per file costs more in
// scheduler wakeups than reading a small file, and a worker reads the
// batch's files relative to the folder's open descriptor.
const batchSize = 32

// batch is a run of consecutive files (in walk order) of one folder; seq
// numbers batches in walk order. The batch holds dir until its worker
// releases it.
type batch struct {
	seq     int
	dir     *dirRef
	names   []string // file names in dir
	rels    []string // their paths relative to the workspace
	results []scanResult
}

// walker lists the files to search, in sorted path order, honouring
// .gitignore files and skipping .git, symlinks, special files and the
// data root. Every folder is opened relative to its parent without
// following a symlink, so a folder swapped for a symlink mid-walk is
// skipped, never followed. Only its own goroutine touches it until the
// walk ends.
type walker struct {
	q          *query
	root       *dirRef
	batch      *batch
	seq        int
	unreadable int
	buf        []byte
}

func (w *walker) run(ctx context.Context, jobs chan<- *batch) error {
	err := w.walk(ctx, jobs)
	if ferr := w.flush(ctx, jobs); err == nil {
		err = ferr
	}
	return err
}

// walk goes down to the start folder, reading the ignore files above
// it, then searches the start file or walks the start folder.
func (w *walker) walk(ctx context.Context, jobs chan<- *batch) error {
	stack := w.excludes()
	target, name := w.q.startRel, ""
	if w.q.startFile {
		target, name = splitRel(w.q.startRel)
	}
	d, err := descend(w.root, target, func(d *dirRef, rel string) {
		stack = stack.with(w.ignoreFile(d, rel, ".gitignore"))
	})
	if err != nil {
		return &pathError{msg: openError("search", w.q.startRel, err)}
	}
	defer d.release()
	if w.q.startFile {
		return w.add(ctx, jobs, d, name, w.q.startRel)
	}
	return w.dir(ctx, jobs, d, w.q.startRel, stack)
}

// excludes loads .git/info/exclude, if it is a regular file.
func (w *walker) excludes() ignoreStack {
	d, err := descend(w.root, ".git/info", nil)
	if err != nil {
		return nil
	}
	defer d.release()
	return ignoreStack(nil).with(w.ignoreFile(d, "", "exclude"))
}

// ignoreFile reads and compiles the ignore file name in d, whose rules
// apply below rel; nil if there is none or it cannot be read (a symlink,
// a FIFO, a device, over maxIgnoreFileSize).
func (w *walker) ignoreFile(d *dirRef, rel, name string) *ignoreFile {
	data, err := d.readWhole(name, maxIgnoreFileSize, &w.buf)
	if err != nil {
		return nil
	}
	return parseIgnore(rel, data)
}

// dir walks one folder: its .gitignore first, then its entries in order.
func (w *walker) dir(ctx context.Context, jobs chan<- *batch, d *dirRef, rel string, stack ignoreStack) error {
	entries, err := d.entries()
	if err != nil {
		w.unreadable++
		return nil
	}
	sortEntries(entries)
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			stack = stack.with(w.ignoreFile(d, rel, ".gitignore"))
		}
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.entry(ctx, jobs, d, rel, e.Name(), e.Type().IsDir(), e.Type().IsRegular(), stack); err != nil {
			return err
		}
	}
	return nil
}

// entry walks into one folder entry, or queues one regular file.
func (w *walker) entry(ctx context.Context, jobs chan<- *batch, d *dirRef, rel, name string, isDir, isRegular bool, stack ignoreStack) error {
	if name == ".git" {
		return nil
	}
	childRel := path.Join(rel, name)
	switch {
	case isDir:
		if stack.ignored(childRel, true) {
			return nil
		}
		sub, err := d.sub(name)
		if err != nil {
			// Swapped for a symlink since it was listed, gone, or the
			// data root: skipped, never followed.
			w.unreadable++
			return nil
		}
		defer sub.release()
		return w.dir(ctx, jobs, sub, childRel, stack)
	case isRegular:
		if stack.ignored(childRel, false) || !w.q.globs.match(childRel) {
			return nil
		}
		return w.add(ctx, jobs, d, name, childRel)
	}
	return nil
}

// add queues one file, sending the batch when it is full or the file is
// in another folder.
func (w *walker) add(ctx context.Context, jobs chan<- *batch, d *dirRef, name, rel string) error {
	if w.batch != nil && w.batch.dir != d {
		if err := w.flush(ctx, jobs); err != nil {
			return err
		}
	}
	if w.batch == nil {
		d.acquire()
		w.batch = &batch{seq: w.seq, dir: d}
		w.seq++
	}
	w.batch.names = append(w.batch.names, name)
	w.batch.rels = append(w.batch.rels, rel)
	if len(w.batch.names) < batchSize {
		return nil
	}
	return w.flush(ctx, jobs)
}

// flush sends the batch being filled, if any; a batch that cannot be
// sent releases its folder.
func (w *walker) flush(ctx context.Context, jobs chan<- *batch) error {
	if w.batch == nil {
		return nil
	}
	b := w.batch
	w.batch = nil
	select {
	case jobs <- b:
		return nil
	case <-ctx.Done():
		b.dir.release()
		return ctx.Err()
	}
}

// isPathError reports whether err is a path refused for the model.
func isPathError(err error) bool {
	var pe *pathError
	return errors.As(err, &pe)
}

package files

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// batchSize is how many files of one folder travel together from the
// walker to a worker: one channel operation per file costs more in
// scheduler wakeups than reading a small file, and a worker opens the
// folder once per batch to open its files relative to it.
const batchSize = 32

// batch is a run of consecutive files (in walk order) of one folder; seq
// numbers batches in walk order.
type batch struct {
	seq     int
	dir     string   // the folder's real path
	names   []string // file names in dir
	rels    []string // their paths relative to the workspace
	results []scanResult
}

// walker lists the files to search, in sorted path order, honouring
// .gitignore files and skipping .git, symlinks and special files. Only
// its own goroutine touches it until the walk ends.
type walker struct {
	q          *query
	batch      *batch
	seq        int
	unreadable int
}

func (w *walker) run(ctx context.Context, jobs chan<- *batch) error {
	var err error
	if w.q.startFile {
		err = w.add(ctx, jobs, filepath.Dir(w.q.start), filepath.Base(w.q.start), w.q.startRel)
	} else {
		err = w.dir(ctx, jobs, w.q.start, w.q.startRel, w.ancestorIgnores())
	}
	if err != nil {
		return err
	}
	return w.flush(ctx, jobs)
}

// ancestorIgnores loads .git/info/exclude and the .gitignore files of the
// folders above the start folder, so a search of a subfolder obeys them.
func (w *walker) ancestorIgnores() ignoreStack {
	var stack ignoreStack
	root := w.q.ws.real
	if data, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude")); err == nil {
		stack = stack.with(parseIgnore("", data))
	}
	if w.q.startRel == "" {
		return stack
	}
	dir := ""
	for {
		if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), ".gitignore")); err == nil {
			stack = stack.with(parseIgnore(dir, data))
		}
		next := nextComponent(w.q.startRel, dir)
		if next == w.q.startRel {
			return stack
		}
		dir = next
	}
}

// nextComponent returns the folder one level below dir on the way to
// target ("a/b" after "a" for target "a/b/c").
func nextComponent(target, dir string) string {
	rest := target
	if dir != "" {
		rest = target[len(dir)+1:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return path.Join(dir, rest[:i])
	}
	return target
}

// dir walks one folder: its .gitignore first, then its entries in order.
func (w *walker) dir(ctx context.Context, jobs chan<- *batch, real, rel string, stack ignoreStack) error {
	entries, err := os.ReadDir(real)
	if err != nil {
		w.unreadable++
		return nil
	}
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			if data, err := os.ReadFile(filepath.Join(real, ".gitignore")); err == nil {
				stack = stack.with(parseIgnore(rel, data))
			}
		}
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		if name == ".git" {
			continue
		}
		childRel := path.Join(rel, name)
		switch typ := e.Type(); {
		case typ.IsDir():
			if stack.ignored(childRel, true) {
				continue
			}
			if err := w.dir(ctx, jobs, filepath.Join(real, name), childRel, stack); err != nil {
				return err
			}
		case typ.IsRegular():
			if stack.ignored(childRel, false) || !w.q.globs.match(childRel) {
				continue
			}
			if err := w.add(ctx, jobs, real, name, childRel); err != nil {
				return err
			}
		}
	}
	return nil
}

// add queues one file, sending the batch when it is full or the file is
// in another folder.
func (w *walker) add(ctx context.Context, jobs chan<- *batch, dir, name, rel string) error {
	if w.batch != nil && w.batch.dir != dir {
		if err := w.flush(ctx, jobs); err != nil {
			return err
		}
	}
	if w.batch == nil {
		w.batch = &batch{seq: w.seq, dir: dir}
		w.seq++
	}
	w.batch.names = append(w.batch.names, name)
	w.batch.rels = append(w.batch.rels, rel)
	if len(w.batch.names) < batchSize {
		return nil
	}
	return w.flush(ctx, jobs)
}

// flush sends the batch being filled, if any.
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
		return ctx.Err()
	}
}

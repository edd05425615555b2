package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/avaagent/ava/internal/fserr"
)

// appendFile is an append-only JSONL file owned by a single goroutine.
type appendFile struct {
	path string
	f    *os.File
	// torn is set when the file does not end with a newline (a crash or a
	// failed write left part of a line): the next write starts with one.
	torn    bool
	dirty   bool // written since the last fsync
	lastUse time.Time
	// ended is set when the trace's run wrote its SessionEnd: the file is
	// closed at the next periodic sync instead of after an idle minute.
	ended bool

	pending []byte // the current batch's bytes for this file
	err     error  // the current batch's write or fsync error
	inBatch bool   // in the writer's list of files touched by the batch
	// newName is set while the file's creation is not yet durable: its
	// directory must be fsynced (once, with the next sync).
	newName bool
}

// openAppend opens (creating it 0600, and its directory 0700) the file at
// path for appending and notes whether it ends in a torn line.
func openAppend(path string) (*appendFile, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fserr.Wrap("create log directory", dir, err)
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fserr.Wrap("open log file", path, err)
	}
	torn, err := endsTorn(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("check end of %s: %w", path, err)
	}
	return &appendFile{path: path, f: f, torn: torn, newName: created}, nil
}

// endsTorn reports whether the regular file f is non-empty and does not
// end with a newline.
func endsTorn(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return false, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], fi.Size()-1); err != nil {
		return false, err
	}
	return b[0] != '\n', nil
}

// syncDir fsyncs a directory so that a newly created file's name is
// durable. File systems that cannot sync directories are tolerated.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// add queues one line (ending in '\n') for the next flush.
func (a *appendFile) add(line []byte) {
	if len(a.pending) == 0 && a.torn {
		a.pending = append(a.pending, '\n')
	}
	a.pending = append(a.pending, line...)
}

// flush writes the pending bytes with one write call. After a partial
// write it records whether the file now ends inside a line, so the next
// write starts on a new one; nothing already in the file is touched.
func (a *appendFile) flush() error {
	if len(a.pending) == 0 {
		return nil
	}
	buf := a.pending
	a.pending = a.pending[:0]
	if cap(a.pending) > 1<<20 {
		a.pending = nil // do not keep a large batch's buffer per file
	}
	n, err := a.f.Write(buf)
	if n > 0 {
		a.dirty = true
		a.torn = buf[n-1] != '\n'
	}
	if err != nil {
		if c := fserr.Cause(a.path, err); c != "" {
			return fmt.Errorf("write %s (%d of %d bytes written): %s: %w", a.path, n, len(buf), c, err)
		}
		return fmt.Errorf("write %s (%d of %d bytes written): %w", a.path, n, len(buf), err)
	}
	return nil
}

// syncNewNames fsyncs, once per directory, the directories of files whose
// creation is not yet durable. Creating many files (one trace per
// subagent) then costs one directory fsync per sync, not one per file.
func syncNewNames(files ...*appendFile) error {
	done := map[string]error{}
	var errs []error
	for _, a := range files {
		if a == nil || !a.newName {
			continue
		}
		dir := filepath.Dir(a.path)
		err, seen := done[dir]
		if !seen {
			err = syncDir(dir)
			done[dir] = err
			errs = append(errs, err)
		}
		if err == nil {
			a.newName = false
		}
	}
	return errors.Join(errs...)
}

// syncFS flushes the file system holding files with one syncfs(2) call,
// which covers their data and their directory entries, and marks them
// clean. On an error every written file of the batch carries it.
func syncFS(files []*appendFile) error {
	var any *appendFile
	for _, a := range files {
		if a.dirty || a.newName {
			any = a
			break
		}
	}
	if any == nil {
		return nil
	}
	if err := unix.Syncfs(int(any.f.Fd())); err != nil {
		err = fmt.Errorf("syncfs for %s: %w", filepath.Dir(any.path), err)
		for _, a := range files {
			if a.inBatch {
				a.err = errors.Join(a.err, err)
			}
		}
		return err
	}
	for _, a := range files {
		a.dirty, a.newName = false, false
	}
	return nil
}

// sync fsyncs the file if it was written since the last sync, and its
// directory if the file is new.
func (a *appendFile) sync() error {
	if a.newName {
		if err := syncNewNames(a); err != nil {
			return err
		}
	}
	if !a.dirty {
		return nil
	}
	// EINVAL and ENOTSUP: a special file (a pipe, a device) that cannot
	// be synced; there is nothing more to do for it.
	if err := a.f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fserr.Wrap("fsync", a.path, err)
	}
	a.dirty = false
	return nil
}

// close fsyncs and closes the file.
func (a *appendFile) close() error {
	err := a.sync()
	if cerr := a.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close %s: %w", a.path, cerr)
	}
	return err
}

package files

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// This file holds what read_file and the searches share to stay inside
// the workspace: the workspace is opened once per call (dirRef), and
// every folder and file below it is opened relative to its parent, one
// component at a time, never through a symlink, without blocking, and
// only if it is a regular file or a folder. Ava's data root is refused
// even when it lies inside the workspace (by identity, so a bind mount or
// a rename does not hide it).

// maxIgnoreFileSize bounds a .gitignore or .git/info/exclude read.
const maxIgnoreFileSize = 1 << 20

// errDenied marks a folder the file tools never open (the data root).
var errDenied = errors.New("Ava's data root, which the file tools never read")

// errSymlink marks a path component that is a symlink where the tools do
// not follow one (it appeared after the path was checked).
var errSymlink = errors.New("a symlink the file tools do not follow")

// specialError is an entry that is neither a regular file nor a folder.
type specialError struct{ kind string }

func (e *specialError) Error() string {
	return fmt.Sprintf("%s, not a regular file or folder; refused", e.kind)
}

// openTree opens the workspace's root folder for one call.
func (t *Tools) openTree(ws workspace) (*dirRef, error) {
	return openRootDir(ws.real, t.cfg.Deny)
}

// descend opens the folder at rel (slash-separated, relative to root, ""
// for root itself) one component at a time, calling visit with each
// folder above the target (root included) before going down. The
// returned folder has one holder, the caller.
func descend(root *dirRef, rel string, visit func(d *dirRef, rel string)) (*dirRef, error) {
	root.acquire()
	d, here := root, ""
	if rel == "" {
		return d, nil
	}
	for _, name := range strings.Split(rel, "/") {
		if visit != nil {
			visit(d, here)
		}
		next, err := d.sub(name)
		d.release()
		if err != nil {
			return nil, err
		}
		d = next
		here = joinRel(here, name)
	}
	return d, nil
}

// joinRel joins slash-separated relative paths, "" being the root.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// splitRel splits rel into its folder ("" for the root) and last name.
func splitRel(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// openError explains for the model why a path could not be opened.
func openError(name, p string, err error) string {
	var se *specialError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%s: %s is %s", name, p, se.Error())
	case errors.Is(err, errDenied):
		return fmt.Sprintf("%s: %s is in %s; refused", name, p, errDenied)
	case errors.Is(err, errSymlink):
		return fmt.Sprintf("%s: %s changed while it was being opened (a component became %s); refused", name, p, errSymlink)
	}
	return fmt.Sprintf("%s: cannot open %s: %v", name, p, err)
}

// sortEntries sorts folder entries by name, as os.ReadDir does.
func sortEntries(entries []os.DirEntry) {
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// modeKind names a file mode the tools refuse.
func modeKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	}
	return "not a regular file"
}

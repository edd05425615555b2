//go:build !unix

package files

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// dirRef is an open folder of the workspace (an os.Root), so nothing
// opened through it can lead outside it. See tree_unix.go for the Unix
// version, which also never follows a symlink inside the workspace.
type dirRef struct {
	root   *os.Root
	path   string
	denied []os.FileInfo
	refs   atomic.Int32
}

// identities returns the folders at paths that exist.
func identities(paths []string) []os.FileInfo {
	var out []os.FileInfo
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			out = append(out, fi)
		}
	}
	return out
}

// openRootDir opens the workspace folder at real.
func openRootDir(real string, deniedPaths []string) (*dirRef, error) {
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", real, err)
	}
	return newDirRef(r, real, identities(deniedPaths))
}

// newDirRef wraps r, refusing a denied folder.
func newDirRef(r *os.Root, path string, denied []os.FileInfo) (*dirRef, error) {
	fi, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	for _, d := range denied {
		if os.SameFile(fi, d) {
			r.Close()
			return nil, fmt.Errorf("%s: %w", path, errDenied)
		}
	}
	d := &dirRef{root: r, path: path, denied: denied}
	d.refs.Store(1)
	return d, nil
}

func (d *dirRef) acquire() { d.refs.Add(1) }

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

// sub opens the folder name in d, refusing a symlink.
func (d *dirRef) sub(name string) (*dirRef, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("open folder %s/%s: %w", d.path, name, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("open folder %s/%s: %w", d.path, name, errSymlink)
	}
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("open folder %s/%s: %w", d.path, name, err)
	}
	return newDirRef(r, d.path+"/"+name, d.denied)
}

// entries lists d's entries.
func (d *dirRef) entries() ([]os.DirEntry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// checkEntry refuses a symlink or special file name in d.
func (d *dirRef) checkEntry(name string) (os.FileInfo, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	switch m := fi.Mode(); {
	case m&os.ModeSymlink != 0:
		return nil, errSymlink
	case !m.IsRegular() && !m.IsDir():
		return nil, &specialError{kind: "a special file"}
	}
	return fi, nil
}

// openEntry opens the entry name of d for read_file.
func (d *dirRef) openEntry(name string) (*os.File, *dirRef, error) {
	fi, err := d.checkEntry(name)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s/%s: %w", d.path, name, err)
	}
	if fi.IsDir() {
		sub, err := d.sub(name)
		return nil, sub, err
	}
	f, err := d.root.Open(name)
	return f, nil, err
}

// readWhole reads the regular file name in d, at most maxSize bytes.
func (d *dirRef) readWhole(name string, maxSize int64, buf *[]byte) ([]byte, error) {
	fi, err := d.checkEntry(name)
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", d.path, name, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("read %s/%s: %w", d.path, name, &specialError{kind: "a folder"})
	}
	if fi.Size() > maxSize {
		return nil, errTooLarge
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSize))
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", d.path, name, err)
	}
	*buf = data
	return data, nil
}

//go:build unix

package files

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"os"
	"sync/atomic"
)

// dirRef is an open folder of the workspace that its entries are opened
// relative to (openat), one path component at a time and never through a
// symlink, so a folder swapped for a symlink while a tool works cannot
// lead it outside. It is shared by the walker and the batches of files it
// hands to workers, and closed when the last of them releases it.
//
// Files are read with raw system calls: os.Open registers every file with
// the runtime poller, costing two extra system calls per file, which on
// trees of small files is a large share of the search time.
type dirRef struct {
	f      *os.File
	fd     int
	path   string // for messages
	denied []fileID
	refs   atomic.Int32
}

// fileID identifies a file or folder by device and inode.
type fileID struct{ dev, ino uint64 }

// openFlags are the flags of every open below the workspace: no symlink
// followed, no blocking on a FIFO, nothing inherited by a child process.
const openFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK

// identities returns the identities of the folders at paths that exist.
func identities(paths []string) []fileID {
	var out []fileID
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil {
			out = append(out, fileID{uint64(st.Dev), uint64(st.Ino)})
		}
	}
	return out
}

// openRootDir opens the workspace folder at real (its symlinks resolved)
// as the root every other open is relative to.
func openRootDir(real string, deniedPaths []string) (*dirRef, error) {
	fd, err := unix.Open(real, openFlags|unix.O_DIRECTORY, 0)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(real, openFlags|unix.O_DIRECTORY, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", real, err)
	}
	return newDirRef(fd, real, identities(deniedPaths))
}

// newDirRef wraps the folder descriptor fd, refusing a denied folder.
func newDirRef(fd int, path string, denied []fileID) (*dirRef, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	id := fileID{uint64(st.Dev), uint64(st.Ino)}
	for _, d := range denied {
		if d == id {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %w", path, errDenied)
		}
	}
	d := &dirRef{f: os.NewFile(uintptr(fd), path), fd: fd, path: path, denied: denied}
	d.refs.Store(1)
	return d, nil
}

// acquire adds a holder of d.
func (d *dirRef) acquire() { d.refs.Add(1) }

// release drops a holder of d and closes it after the last.
func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		d.f.Close()
	}
}

// sub opens the folder name in d, refusing a symlink, anything that is
// not a folder, and a denied folder.
func (d *dirRef) sub(name string) (*dirRef, error) {
	fd, err := openRetry(d.fd, name, openFlags|unix.O_DIRECTORY)
	if err != nil {
		return nil, fmt.Errorf("open folder %s/%s: %w", d.path, name, notFollowed(err))
	}
	return newDirRef(fd, d.path+"/"+name, d.denied)
}

// entries lists d's entries, unsorted, from the start of the folder
// whoever read it before.
func (d *dirRef) entries() ([]os.DirEntry, error) {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("list %s: %w", d.path, err)
	}
	return d.f.ReadDir(-1)
}

// openEntry opens the entry name of d for read_file: a regular file, or
// a folder (as a *dirRef, the file then nil). A symlink, a FIFO, a
// device or a socket is refused, without blocking.
func (d *dirRef) openEntry(name string) (*os.File, *dirRef, error) {
	fd, err := openRetry(d.fd, name, openFlags)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s/%s: %w", d.path, name, notFollowed(err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("stat %s/%s: %w", d.path, name, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return os.NewFile(uintptr(fd), d.path+"/"+name), nil, nil
	case unix.S_IFDIR:
		sub, err := newDirRef(fd, d.path+"/"+name, d.denied)
		return nil, sub, err
	}
	unix.Close(fd)
	return nil, nil, &specialError{kind: kindName(uint32(st.Mode))}
}

// readWhole reads the regular file name in d, at most maxSize bytes, into
// *buf (grown as needed) and returns its content. A symlink, a FIFO, a
// device or a socket is refused without blocking.
func (d *dirRef) readWhole(name string, maxSize int64, buf *[]byte) ([]byte, error) {
	fd, err := openRetry(d.fd, name, openFlags)
	if err != nil {
		return nil, fmt.Errorf("open %s/%s: %w", d.path, name, notFollowed(err))
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s/%s: %w", d.path, name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("read %s/%s: %w", d.path, name, &specialError{kind: kindName(uint32(st.Mode))})
	}
	if st.Size > maxSize {
		return nil, errTooLarge
	}
	return readFD(fd, int(st.Size), buf, d.path+"/"+name)
}

// readFD reads up to size bytes (what stat saw) from fd into *buf.
func readFD(fd, size int, buf *[]byte, name string) ([]byte, error) {
	if cap(*buf) < size+1 {
		*buf = make([]byte, size+1+size/4)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if m == 0 {
			return b[:n], nil
		}
		n += m
		if n == size {
			return b[:n], nil // all that stat saw; skip the read that only returns EOF
		}
	}
	return b[:n], nil // it grew while we read; search what fits
}

// notFollowed turns the errors of an open that met a symlink (O_NOFOLLOW
// gives ELOOP, O_DIRECTORY on a symlink ENOTDIR) into errSymlink.
func notFollowed(err error) error {
	if errors.Is(err, unix.ELOOP) {
		return errSymlink
	}
	return err
}

// kindName names a file type that the tools refuse.
func kindName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a named pipe (FIFO)"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a regular file"
}

func openRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

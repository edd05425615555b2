//go:build unix

package files

import (
	"errors"
	"fmt"
	"syscall"
)

// dirFD is an open folder that files are opened relative to (openat), so
// the kernel resolves one path component per file, not the whole path.
//
// The search reads with raw system calls: os.Open registers every file
// with the runtime poller, costing two extra system calls per file, which
// on trees of small files is a large share of the search time.
type dirFD struct {
	fd   int
	path string
}

// openDir opens the folder at path for reading files in it.
func openDir(path string) (dirFD, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	for errors.Is(err, syscall.EINTR) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return dirFD{}, fmt.Errorf("open folder %s: %w", path, err)
	}
	return dirFD{fd: fd, path: path}, nil
}

func (d dirFD) close() { syscall.Close(d.fd) }

// readWhole reads the regular file name in d, at most maxSize bytes, into
// *buf (grown as needed) and returns its content. It does not follow a
// symlink: the walk skips them, and this closes the gap in which one could
// be swapped in afterwards.
func (d dirFD) readWhole(name string, maxSize int64, buf *[]byte) ([]byte, error) {
	fd, err := openRetry(d.fd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("open %s/%s: %w", d.path, name, err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s/%s: %w", d.path, name, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("read %s/%s: not a regular file", d.path, name)
	}
	if st.Size > maxSize {
		return nil, errTooLarge
	}
	size := int(st.Size)
	if cap(*buf) < size+1 {
		*buf = make([]byte, size+1+size/4)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for n < len(b) {
		m, err := syscall.Read(fd, b[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", d.path, name, err)
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

func openRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

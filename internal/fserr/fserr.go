// Package fserr explains file system errors in the words a user needs:
// which path, and what is wrong with it. The operating system's own text
// ("permission denied", "read-only file system") is usually clear; what it
// leaves out is which component of a path is a file when a directory was
// expected, and that "no space left on device" means the disk is full.
package fserr

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Wrap returns err, met doing op on path, as "op path: cause: err", where
// cause explains what the operating system's error leaves out (see
// [Cause]), or as "op path: err" when there is nothing to add. A nil err
// gives nil. The message is one line when err's is.
func Wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	if c := Cause(path, err); c != "" {
		return fmt.Errorf("%s %s: %s: %w", op, path, c, err)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// Cause explains err, a file system error met at path, in a few words, or
// returns "" when the error's own text says it already:
//   - ENOSPC: "the disk is full"; EDQUOT: "the disk quota is used up";
//   - ENOTDIR: "P is a file, not a directory", naming the nearest existing
//     component P of path that is not a directory;
//   - EROFS: "the file system is read-only".
func Cause(path string, err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "the disk is full"
	case errors.Is(err, syscall.EDQUOT):
		return "the disk quota is used up"
	case errors.Is(err, syscall.EROFS):
		return "the file system is read-only"
	case errors.Is(err, syscall.ENOTDIR):
		if f := FileInPath(path); f != "" {
			return f + " is a file, not a directory"
		}
	}
	return ""
}

// FileInPath returns the nearest existing component of path (path itself
// or one of its parents) that exists and is not a directory, or "" when
// every existing component is a directory.
func FileInPath(path string) string {
	p := filepath.Clean(path)
	for {
		st, err := os.Stat(p)
		if err == nil && !st.IsDir() {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}

// NoSpaceLeft reports whether the file system holding path (or its
// nearest existing parent) has no blocks left for unprivileged users. It
// tells a full disk behind an error that does not say so, such as
// SQLite's generic "disk I/O error" when it cannot grow its -shm file.
func NoSpaceLeft(path string) bool {
	p := filepath.Clean(path)
	for {
		var st unix.Statfs_t
		err := unix.Statfs(p, &st)
		if err == nil {
			return st.Bavail == 0
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}

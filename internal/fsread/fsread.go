// Package fsread reads the small files Ava trusts least (config and role
// files, which a workspace or a user can point anywhere): only a regular
// file, never blocking on a FIFO, and never more than a limit.
package fsread

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// File opens path without blocking on a FIFO and reads it with Regular.
func File(path string, limit int64, what string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Regular(f, limit, what)
}

// Regular reads f whole, if it is a regular file of at most limit bytes;
// what names the kind of file in the error ("a role file"). The caller
// opens f with O_NONBLOCK, so that opening a FIFO does not block.
func Regular(f *os.File, limit int64, what string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s); refused", fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit of %s", fi.Size(), limit, what)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("over the %d-byte limit of %s", limit, what)
	}
	return data, nil
}

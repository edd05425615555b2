package sqlite

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Whether a database is in use.
//
// The store keeps a database's -wal and -shm files when its last
// connection closes (keepLogFiles), so a -shm file no longer says that
// some process has the database open. A read-only open needs to know
// (openReadOnly): a database in use may have commits in its log that
// the main file lacks, and is opened to share the log and the locks of
// those using it; one nobody uses, with nothing in its log, is read as
// the immutable snapshot it is, writing nothing.
//
// Another process is seen by its lock: SQLite's unix VFS holds a shared
// lock on the dead-man switch byte of the -shm file for as long as a
// connection of the process has the file mapped. This process is seen by
// its own count (openHere), since POSIX locks never conflict with the
// process's own, and since closing any descriptor of a file drops every
// lock the process holds on it: the probe's open and close of the -shm
// file must not happen while a store of this process has the database
// open, or it would drop that store's lock. The count is kept by the
// database file's device and inode, as SQLite shares its own locks
// within a process, so that one file opened by two paths (a symbolic
// link, a bind mount) is one. A connection a caller still uses when its
// store closes (rows left open) is closed by database/sql only when the
// caller lets it go, after the count has dropped: a store's callers
// close what they open.

// shmDeadManSwitch is the byte of the -shm file SQLite's unix VFS holds
// a shared lock on while a connection has the file mapped
// (UNIX_SHM_DMS in os_unix.c: (22 + 8) × 4 + 8).
const shmDeadManSwitch = 128

// fileID identifies a file whatever the path it is reached by.
type fileID struct{ dev, ino uint64 }

// idOf returns the identity of the file at path.
func idOf(path string) (fileID, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("stat %s: no device and inode", path)
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// openHere counts this process's stores open on each database file.
var openHere = struct {
	sync.Mutex
	n map[fileID]int
}{n: map[fileID]int{}}

// holdHere counts a store of this process open on the database file at
// path until the returned release is called (once the store's
// connections are closed).
func holdHere(path string) (release func(), err error) {
	id, err := idOf(path)
	if err != nil {
		return nil, fmt.Errorf("identify the database file: %w", err)
	}
	openHere.Lock()
	openHere.n[id]++
	openHere.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			openHere.Lock()
			defer openHere.Unlock()
			if openHere.n[id]--; openHere.n[id] <= 0 {
				delete(openHere.n, id)
			}
		})
	}, nil
}

// mayBeInUse reports whether the database at path may have commits its
// main file lacks: a store of this process has it open, its log holds
// frames (a process has it open, or one ended without checkpointing), or
// another process has its -shm file mapped. When it cannot tell, it says
// so.
func mayBeInUse(path string) bool {
	id, err := idOf(path)
	if err != nil {
		return true
	}
	openHere.Lock()
	defer openHere.Unlock() // held across the probe: see the comment above
	if openHere.n[id] > 0 {
		return true
	}
	info, err := os.Stat(path + "-wal")
	switch {
	case err == nil && info.Size() > 0:
		return true
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return true
	}
	held, err := lockedByOthers(path + "-shm")
	return held || err != nil
}

// lockedByOthers reports whether another process holds a lock on the
// dead-man switch byte of the -shm file at shm (false when there is no
// such file).
func lockedByOthers(shm string) (bool, error) {
	f, err := os.Open(shm)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: shmDeadManSwitch, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != syscall.F_UNLCK, nil
}

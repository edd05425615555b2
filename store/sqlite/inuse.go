package sqlite

import (
	"errors"
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
// open, or it would drop that store's lock.

// shmDeadManSwitch is the byte of the -shm file SQLite's unix VFS holds
// a shared lock on while a connection has the file mapped
// (UNIX_SHM_DMS in os_unix.c: (22 + 8) × 4 + 8).
const shmDeadManSwitch = 128

// openHere counts this process's stores open on each database file, by
// absolute path.
var openHere = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// holdHere counts a store of this process open on path until the
// returned release is called (once the store's connections are closed).
func holdHere(path string) (release func()) {
	openHere.Lock()
	openHere.n[path]++
	openHere.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			openHere.Lock()
			defer openHere.Unlock()
			if openHere.n[path]--; openHere.n[path] <= 0 {
				delete(openHere.n, path)
			}
		})
	}
}

// mayBeInUse reports whether the database at path may have commits its
// main file lacks: a store of this process has it open, its log holds
// frames (a process has it open, or one ended without checkpointing), or
// another process has its -shm file mapped. When it cannot tell, it says
// so.
func mayBeInUse(path string) bool {
	openHere.Lock()
	defer openHere.Unlock() // held across the probe: see the package comment above
	if openHere.n[path] > 0 {
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

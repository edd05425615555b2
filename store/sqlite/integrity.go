package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/avaagent/ava/store/internal/record"
)

// The integrity check at open (PRAGMA quick_check) reads every page: on a
// database of 64 MB it takes about 300 ms, and a command line or an MCP
// server started per session would pay it on every start. So it runs only
// when the file may have changed outside Ava since it was last known
// sound:
//
//   - the last process that closed the store cleanly, or the last check,
//     records the file's identity (device, inode, size, modification and
//     change times) beside it, in "<database>-checked"; a file that still
//     has that identity was not touched since, and is not checked again;
//   - while another Ava process uses the store (a heartbeat within
//     liveWithin), that process opened and checked it, and works on it.
//
// A copy cut short, a restore, an editor or a tool writing into the file
// all change its identity, so the check runs; what no marker sees is a
// disk that rots a page at rest, which SQLite reports when the page is
// read (as a store error naming the file).

// liveWithin is how recent another process's heartbeat must be for the
// store to be taken as in use and checked by it.
const liveWithin = time.Minute

// markerPath is where the file identity of the last known sound state is
// kept.
func (s *Store) markerPath() string { return s.path + "-checked" }

// identity describes the database file as stat sees it, or "" when it
// cannot be read.
func (s *Store) identity() string {
	info, err := os.Stat(s.path)
	if err != nil {
		return ""
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("v1 %d %d %d %d.%09d %d.%09d", st.Dev, st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}

// knownSound says why the integrity check may be skipped, or "" when it
// must run.
func (s *Store) knownSound(ctx context.Context) string {
	if id := s.identity(); id != "" {
		if b, err := os.ReadFile(s.markerPath()); err == nil && strings.TrimSpace(string(b)) == id {
			return "unchanged since Ava last closed or checked it"
		}
	}
	var live int
	err := s.writer.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE heartbeat_at > ?`,
		record.ToNS(s.now().Add(-liveWithin))).Scan(&live)
	if err == nil && live > 0 {
		return "in use by another Ava process"
	}
	return ""
}

// markSound records the file's identity as known sound (after a check
// passed, or at a clean close). A marker that cannot be written only
// means the next open checks again. A marker that already says so is
// left as it is; another is overwritten in place: one torn by a crash or
// by another process writing it at once matches no identity, so it too
// only means a check, while a temporary file renamed over it would
// create a file at every close, the costliest thing a file system does
// (see keepLogFiles).
func (s *Store) markSound() {
	id := s.identity()
	if id == "" {
		return
	}
	line := []byte(id + "\n")
	if old, err := os.ReadFile(s.markerPath()); err == nil && bytes.Equal(old, line) {
		return
	}
	if err := overwrite(s.markerPath(), line); err != nil {
		s.log.Debug("store integrity marker not written", "path", s.markerPath(), "err", err)
	}
}

// overwrite makes the file at path hold b, writing over its bytes rather
// than truncating it first (which would leave it empty where the disk
// is full), creating it if missing.
func overwrite(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Truncate(int64(len(b)))
	}
	return errors.Join(err, f.Close())
}

// forgetSound removes the marker: the file is being changed in a way a
// later open must check (a store found damaged keeps no marker).
func (s *Store) forgetSound() {
	if err := os.Remove(s.markerPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Debug("store integrity marker not removed", "path", s.markerPath(), "err", err)
	}
}

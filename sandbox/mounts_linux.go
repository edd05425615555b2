package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// systemHidden are folders every sandbox covers with an empty tmpfs:
// shared temporary folders and runtime folders, which hold other
// programs' files and Unix sockets (ssh-agent, D-Bus, Docker).
var systemHidden = []string{"/tmp", "/var/tmp", "/run", "/dev/shm"}

// mountState is what setupMounts did, for Landlock's rules.
type mountState struct {
	// private are the tmpfs mounts of systemHidden, the sandbox's own.
	private []string
	// freshProc is true when /proc shows only the sandbox's processes.
	freshProc bool
}

// setupMounts hides folders under empty tmpfs mounts, keeps the
// workspace and the scratch folder visible at their own paths (the
// workspace read-only if asked, else its control entries and the
// repository markers in protect), and mounts a fresh /proc.
func setupMounts(s Spec, protect []string) (mountState, error) {
	var st mountState
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return st, fmt.Errorf("make / private: %w", err)
	}
	keep := []string{filepath.Clean(s.Workspace), filepath.Clean(s.Scratch)}
	for _, m := range s.Mounts {
		keep = append(keep, filepath.Clean(m.Path))
	}
	fds, err := openKeep(keep)
	if err != nil {
		return st, err
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	hide := hiddenDirs(s.Hide)
	// Hidden folders that are not inside a kept one go first: a kept
	// folder inside them is bound back on top.
	var covered []string
	for _, h := range hide {
		if insideAny(h, keep) || insideAny(h, covered) {
			continue
		}
		covered = append(covered, h)
		if slices.Contains(systemHidden, h) {
			st.private = append(st.private, h)
		} else if err := mountTmpfs(h, hiddenTmpfsBytes); err != nil {
			return st, err
		}
	}
	if err := mountPrivate(st.private, s.Limits.withDefaults().tmpfsBytes()); err != nil {
		return st, err
	}
	for i, k := range keep {
		if err := bindBack(k, fds[i], keptReadOnly(s, i)); err != nil {
			return st, err
		}
	}
	if !s.WorkspaceReadOnly {
		if err := protectControl(keep[0], protect); err != nil {
			return st, err
		}
	}
	// Hidden folders inside a kept one (a data root in the workspace).
	for _, h := range hide {
		if insideAny(h, keep) {
			if err := mountTmpfs(h, hiddenTmpfsBytes); err != nil {
				return st, err
			}
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return st, fmt.Errorf("mount a fresh /proc: %w", err)
	}
	st.freshProc = true
	return st, nil
}

// keptReadOnly reports whether the i-th kept folder (the workspace, the
// scratch folder, then the mounts) is bound read-only.
func keptReadOnly(s Spec, i int) bool {
	switch {
	case i == 0:
		return s.WorkspaceReadOnly
	case i >= 2:
		return !s.Mounts[i-2].Write
	}
	return false
}

// hiddenDirs are the existing, real (not symlinked) folders to hide.
func hiddenDirs(extra []string) []string {
	var out []string
	for _, h := range append(slices.Clone(systemHidden), extra...) {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		h = filepath.Clean(h)
		if fi, err := os.Lstat(h); err != nil || !fi.IsDir() || h == "/" || slices.Contains(out, h) {
			continue
		}
		out = append(out, h)
	}
	// Parents first: a folder inside one already hidden needs no mount.
	slices.SortFunc(out, func(a, b string) int { return len(a) - len(b) })
	return out
}

// insideAny reports whether h is strictly beneath one of dirs.
func insideAny(h string, dirs []string) bool {
	for _, d := range dirs {
		if h != d && within(h, d) {
			return true
		}
	}
	return false
}

// openKeep opens each kept folder by path before anything is mounted
// over it, to bind it back later.
func openKeep(keep []string) ([]int, error) {
	var fds []int
	for _, k := range keep {
		fd, err := unix.Open(k, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("open %s: %w", k, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// hiddenTmpfsBytes is the size of the tmpfs hiding a folder the command
// may not write ($HOME, the data root): it holds only the mount points
// of the folders bound back into it.
const hiddenTmpfsBytes = 1 << 20

// mountTmpfs covers dir with an empty tmpfs of size bytes.
func mountTmpfs(dir string, size uint64) error {
	opts := "mode=0755,size=" + strconv.FormatUint(size, 10)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("hide %s: %w", dir, err)
	}
	return nil
}

// mountPrivate gives the sandbox's writable temporary folders (/tmp,
// /var/tmp, /run, /dev/shm) one tmpfs of size bytes between them, so
// that together they hold at most that much: the tmpfs is mounted on the
// first folder, and a subfolder of it is bound on each, the first last
// (on top of the tmpfs itself, which it then covers).
func mountPrivate(dirs []string, size uint64) error {
	if len(dirs) == 0 {
		return nil
	}
	stage := dirs[0]
	if err := mountTmpfs(stage, size); err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		sub := filepath.Join(stage, "."+strconv.Itoa(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			return fmt.Errorf("private %s: %w", dirs[i], err)
		}
		if err := unix.Mount(sub, dirs[i], "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("private %s: %w", dirs[i], err)
		}
	}
	return nil
}

// bindBack mounts the folder open as fd at its own path again, creating
// the mount point if a tmpfs now covers it.
func bindBack(dir string, fd int, readOnly bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("mount point %s: %w", dir, err)
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dir, err)
	}
	if !readOnly {
		return nil
	}
	if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|lockedFlags(dir), ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", dir, err)
	}
	return nil
}

// lockedFlags are the mount flags of dir that a remount in a user
// namespace must keep.
func lockedFlags(dir string) uintptr {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return unix.MS_NOSUID | unix.MS_NODEV
	}
	var out uintptr
	for st, ms := range map[int64]uintptr{unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME} {
		if fs.Flags&st != 0 {
			out |= ms
		}
	}
	return out
}

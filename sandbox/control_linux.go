package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// controlEntry is an entry at the top of the workspace that every
// command sees read-only, even in a writable workspace.
type controlEntry struct {
	name string
	// placeholder: when the entry is missing, an empty folder is made in
	// the workspace to mount read-only, so the command cannot create it.
	placeholder bool
}

// controlEntries are what the person's own tools run, or Ava loads,
// without it showing in a diff: Ava's role files (.ava), git's
// configuration and hooks (.git, a folder or a worktree's pointer file),
// editors' tasks and settings (.vscode, .idea), direnv's script (.envrc)
// and submodules' URLs (.gitmodules). Ava, git and VS Code take an empty
// folder for a missing one, so those three get a placeholder; the others
// are protected when they exist. Every repository below the top is
// protected too (see repos_linux.go).
var controlEntries = []controlEntry{
	{name: ".ava", placeholder: true},
	{name: ".git", placeholder: true},
	{name: ".vscode", placeholder: true},
	{name: ".idea"},
	{name: ".envrc"},
	{name: ".gitmodules"},
}

// protectControl mounts each control entry of the workspace (already
// bound at its own path) read-only over itself, then each repository
// marker in protect (paths relative to the workspace, listed by Ava
// before the helper started; see repos_linux.go). A mount point cannot
// be written, removed, renamed or replaced (EROFS, EBUSY), nor can the
// workspace itself, a mount point too. It fails on a control entry that
// is a symbolic link: the link could be swapped for a folder of the
// command's making, and a link cannot be a mount point.
func protectControl(workspace string, protect []string) error {
	ws, err := unix.Open(workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", workspace, err)
	}
	defer unix.Close(ws)
	for _, e := range controlEntries {
		if err := protectEntry(ws, e); err != nil {
			return fmt.Errorf("keep %s read-only: %w", filepath.Join(workspace, e.name), err)
		}
	}
	for _, rel := range protect {
		if err := protectMarker(ws, rel); err != nil {
			return fmt.Errorf("keep %s read-only: %w", filepath.Join(workspace, rel), err)
		}
	}
	return nil
}

// protectMarker mounts the repository marker rel, beneath the workspace
// open as ws, read-only over itself. Its folder is reached without
// following a link; a marker gone or turned into a link since Ava
// listed it is left alone: Ava finds it changed when the command ends.
func protectMarker(ws int, rel string) error {
	parent, name := filepath.Split(filepath.Clean(rel))
	if name == "" || name == "." || name == ".." || strings.HasPrefix(rel, "/") {
		return fmt.Errorf("not a path beneath the workspace: %q", rel)
	}
	dir := ws
	if parent != "" {
		fd, err := unix.Openat2(ws, filepath.Clean(parent), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("open its folder: %w", err)
		}
		defer unix.Close(fd)
		dir = fd
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	return protectEntry(dir, controlEntry{name: name})
}

// protectEntry mounts one entry of the workspace open as ws read-only
// over itself, making its placeholder first if it needs one.
func protectEntry(ws int, e controlEntry) error {
	var st unix.Stat_t
	err := unix.Fstatat(ws, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		if !e.placeholder {
			return nil
		}
		mkErr := unix.Mkdirat(ws, e.name, 0o755)
		if errors.Is(mkErr, unix.EACCES) || errors.Is(mkErr, unix.EPERM) || errors.Is(mkErr, unix.EROFS) {
			return nil // what the helper may not create, the command may not either
		}
		if mkErr != nil && !errors.Is(mkErr, unix.EEXIST) {
			return fmt.Errorf("make an empty placeholder: %w", mkErr)
		}
		err = unix.Fstatat(ws, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return errors.New("it is a symbolic link, which cannot be kept read-only: make it a real folder or file, or give the role a read-only workspace")
	}
	tree, err := unix.OpenTree(ws, e.name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr read-only: %w", err)
	}
	if err := unix.MoveMount(tree, "", ws, e.name, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

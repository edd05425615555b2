package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

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
// are protected when they exist. The .git of a repository one level down
// (a workspace holding several) is protected too, when it exists.
var controlEntries = []controlEntry{
	{name: ".ava", placeholder: true},
	{name: ".git", placeholder: true},
	{name: ".vscode", placeholder: true},
	{name: ".idea"},
	{name: ".envrc"},
	{name: ".gitmodules"},
}

// protectControl mounts each control entry of the workspace (already
// bound at its own path) read-only over itself. A mount point cannot be
// written, removed, renamed or replaced (EROFS, EBUSY), nor can the
// workspace itself, a mount point too. It fails on an entry that is a
// symbolic link: the link could be swapped for a folder of the command's
// making, and a link cannot be a mount point.
func protectControl(workspace string) error {
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
	return protectNestedGit(workspace, ws)
}

// protectNestedGit keeps read-only the .git of each repository one level
// down, for a workspace that holds several; none is made where missing.
func protectNestedGit(workspace string, ws int) error {
	entries, err := os.ReadDir(workspace)
	if err != nil {
		return fmt.Errorf("list workspace %s: %w", workspace, err)
	}
	for _, e := range entries {
		if !e.IsDir() || slices.ContainsFunc(controlEntries, func(c controlEntry) bool { return c.name == e.Name() }) {
			continue
		}
		sub, err := unix.Openat(ws, e.Name(), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or replaced by a link, since listed
		}
		err = protectEntry(sub, controlEntry{name: ".git"})
		unix.Close(sub)
		if err != nil {
			return fmt.Errorf("keep %s read-only: %w", filepath.Join(workspace, e.Name(), ".git"), err)
		}
	}
	return nil
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

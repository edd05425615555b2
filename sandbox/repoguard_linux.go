package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// repoGuard keeps one sandbox from leaving a repository behind in its
// writable workspace (see repos_linux.go): it lists the markers before
// the command starts, and compares and moves aside after.
type repoGuard struct {
	root string
	skip []string

	mu      sync.Mutex
	base    *repoSnapshot
	changes []RepoChange
}

// newRepoGuard guards the workspace of s, or returns nil when the
// command cannot write it.
func newRepoGuard(s Spec) *repoGuard {
	if s.WorkspaceReadOnly {
		return nil
	}
	return &repoGuard{root: s.Workspace, skip: s.Hide}
}

// prepare makes the top-level placeholders (so that the command's
// sandbox finds them, and they are not taken for the command's), lists
// the markers, and returns those the helper keeps read-only.
func (g *repoGuard) prepare() ([]string, error) {
	if err := makePlaceholders(g.root); err != nil {
		return nil, err
	}
	snap, err := scanRepos(g.root, g.skip, true)
	if err != nil {
		return nil, fmt.Errorf("sandbox: list the workspace's repositories: %w", err)
	}
	if snap.truncated {
		slog.Warn("sandbox: the workspace is too large to list its repositories whole; repositories beyond the listed part are not guarded",
			"workspace", g.root, "entries", maxScanEntries, "time", maxScanTime)
	}
	protect := snap.protectList()
	g.mu.Lock()
	g.base = snap
	g.mu.Unlock()
	return protect, nil
}

// check lists the markers again, moves aside what the command created,
// replaced or changed, and returns what it found since the last check.
// The listing after the moves is the next check's starting point.
func (g *repoGuard) check() []RepoChange {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.base == nil {
		return nil
	}
	after, err := scanRepos(g.root, g.skip, false)
	if err != nil {
		slog.Error("sandbox: could not list the workspace's repositories after a command; check them before running git there",
			"workspace", g.root, "err", err)
		return nil
	}
	pending := g.base.changes(after)
	if len(pending) == 0 {
		return nil
	}
	now := time.Now()
	var found []RepoChange
	for _, c := range pending {
		rc := g.base.apply(c, now)
		found = append(found, rc)
		slog.Warn("sandbox: a command changed a repository in the workspace", "change", rc.String())
	}
	g.changes = append(g.changes, found...)
	// The markers as they are now, quarantined ones included, are the
	// next check's baseline; what was protected stays so.
	if next, err := scanRepos(g.root, g.skip, false); err == nil {
		byEntry := make(map[[2]uint64]marker, len(g.base.markers))
		for _, b := range g.base.markers {
			byEntry[[2]uint64{b.dev, b.ino}] = b
		}
		for rel, m := range next.markers {
			if b, ok := byEntry[[2]uint64{m.dev, m.ino}]; ok && b.kind == m.kind {
				next.markers[rel] = b // the same entry, perhaps moved
			} else {
				m.sum = next.fingerprint(rel, m.kind)
				next.markers[rel] = m
			}
		}
		next.missing = g.base.missing
		for rel, b := range g.base.markers {
			if b.kind == kindTarget {
				next.markers[rel] = b
			}
		}
		g.base = next
	}
	return found
}

// all returns every change found so far.
func (g *repoGuard) all() []RepoChange {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]RepoChange(nil), g.changes...)
}

// makePlaceholders makes the empty folders that stand for a missing
// .ava, .git and .vscode at the top of the workspace, which the helper
// mounts read-only (see controlEntries). A folder Ava may not create
// the command may not either.
func makePlaceholders(root string) error {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox: open workspace %s: %w", root, err)
	}
	defer unix.Close(fd)
	for _, e := range controlEntries {
		if !e.placeholder {
			continue
		}
		err := unix.Mkdirat(fd, e.name, 0o755)
		if err != nil && !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EROFS) {
			return fmt.Errorf("sandbox: make an empty placeholder %s in %s: %w", e.name, root, err)
		}
	}
	return nil
}

// CheckRepos lists the workspace's repository markers again, moves
// aside what the command created, replaced or changed since the last
// check, and returns it. Wait calls it when the command ends; a
// long-running server's caller calls it after each request too.
func (c *Cmd) CheckRepos() []RepoChange {
	if c.repos == nil {
		return nil
	}
	return c.repos.check()
}

// RepoChanges returns every change CheckRepos (and Wait) found.
func (c *Cmd) RepoChanges() []RepoChange {
	if c.repos == nil {
		return nil
	}
	return c.repos.all()
}

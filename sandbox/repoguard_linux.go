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
	// seen are the changes reported, without where they were moved.
	seen map[RepoChange]bool
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
// replaced or changed since it started, and returns what it found that
// it had not reported yet. The first listing stays the baseline, so
// that a marker put back after it was moved aside (a long-running
// server's) is found and moved aside again. What it could not check (a
// folder it cannot list, a workspace too large, a listing that failed)
// is reported too, never passed over in silence.
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
		return g.report([]RepoChange{{Path: g.root, What: "unchecked", Kind: "workspace", Err: err.Error()}})
	}
	var found []RepoChange
	now := time.Now()
	for _, c := range g.base.changes(after) {
		found = append(found, g.base.apply(c, now))
	}
	for _, rel := range after.unchecked {
		found = append(found, RepoChange{Path: after.abs(rel), What: "unchecked", Kind: "folder",
			Err: "it cannot be listed, even with its owner's rights given back"})
	}
	if after.truncated {
		found = append(found, RepoChange{Path: g.root, What: "unchecked", Kind: "workspace",
			Err: fmt.Sprintf("it holds more than %d entries or took longer than %s to list; the rest was not checked", maxScanEntries, maxScanTime)})
	}
	for _, c := range found {
		slog.Warn("sandbox: a command changed a repository in the workspace", "change", c.String())
	}
	return g.report(found)
}

// report keeps the changes not reported before (a moved repository is
// seen again at every check of a long-running server) and returns them.
func (g *repoGuard) report(found []RepoChange) []RepoChange {
	if g.seen == nil {
		g.seen = map[RepoChange]bool{}
	}
	var out []RepoChange
	for _, c := range found {
		key := c
		key.MovedTo = ""
		if c.MovedTo == "" && g.seen[key] {
			continue
		}
		g.seen[key] = true
		out = append(out, c)
	}
	g.changes = append(g.changes, out...)
	return out
}

// all returns every change found so far.
func (g *repoGuard) all() []RepoChange {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]RepoChange(nil), g.changes...)
}

// makePlaceholders makes the empty folders that stand for a missing
// .ava, .git and .vscode at the top of the workspace, which the helper
// mounts read-only (see controlEntries), before the listing, so that the
// listing does not take them for the command's. The helper makes one
// again should it vanish in between (protectEntry): that second attempt
// closes the race, it is not a second place that decides. A folder Ava
// may not create the command may not either.
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

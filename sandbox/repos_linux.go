package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/avaagent/ava/internal/fsread"
)

// Repositories in a writable workspace.
//
// git runs what a repository's configuration names (core.fsmonitor,
// hooks, aliases, filters) when the person runs it in that repository or
// below. A sandboxed command that could create or change a repository
// would so run code outside the sandbox, with the person's rights and
// network, at their next `git status`. Two measures close that, for every
// repository at any depth:
//
//   - Before the command starts, Ava lists the workspace's repository
//     markers (scanRepos), and the helper mounts each existing one
//     read-only over itself, with what their configuration names inside
//     the workspace (core.hooksPath, include.path): none can be written,
//     removed or renamed.
//   - After it ends (and after each call of a long-running server), Ava
//     lists them again. A marker the command created, or put in place of
//     another (renaming a folder moves the read-only mount with it, so
//     the path is free again), or changed where no mount kept it, is
//     moved aside under a name git ignores (quarantine), and reported.
//
// A marker is what git takes for a repository when it looks for one: an
// entry named .git (a folder, or a file or link pointing elsewhere), or a
// folder that holds HEAD and either objects and refs or commondir (a bare
// repository or a worktree's git folder).

// Bounds of one scan: a workspace larger than this is scanned in part,
// and the rest goes unguarded (logged).
const (
	maxScanEntries = 2_000_000
	maxScanTime    = 10 * time.Second
	// maxProtected caps the read-only mounts of one sandbox; markers
	// beyond it are guarded by their fingerprint only.
	maxProtected = 1024
	// maxConfigBytes bounds the repository files a fingerprint reads.
	maxConfigBytes = 1 << 20
)

// QuarantineTag is in the name of every entry Ava moved aside.
const QuarantineTag = ".ava-quarantined-"

// markerKind is what a repository marker is.
type markerKind uint8

const (
	kindGitDir  markerKind = iota + 1 // a folder named .git
	kindGitFile                       // a file or link named .git, pointing at a repository elsewhere
	kindBare                          // a folder git takes for a repository's own folder
	kindTarget                        // a hooks folder or included file a repository's configuration names
)

func (k markerKind) String() string {
	switch k {
	case kindGitDir:
		return "repository"
	case kindGitFile:
		return "repository pointer"
	case kindBare:
		return "bare repository"
	}
	return "file a repository's configuration names"
}

// marker is one repository marker as a scan found it.
type marker struct {
	kind     markerKind
	dev, ino uint64
	// sum fingerprints what git reads from it; set only when no mount
	// keeps it read-only.
	sum [32]byte
	// protected is true when the sandbox mounts it read-only, so only
	// its identity can change.
	protected bool
}

func (m marker) sameEntry(o marker) bool { return m.dev == o.dev && m.ino == o.ino }

// repoSnapshot is the repository markers of one workspace.
type repoSnapshot struct {
	root    string
	markers map[string]marker // by path relative to root ("." for root)
	// missing are paths a repository's configuration names inside the
	// workspace that do not exist: the command must not create them.
	missing   []string
	truncated bool
}

// RepoChange is a repository marker a sandboxed command created, put in
// place of another, changed or moved, and what Ava did about it.
type RepoChange struct {
	// Path is the marker's path.
	Path string `json:"path"`
	// What is "created", "replaced", "changed" or "moved".
	What string `json:"what"`
	// Kind says what the marker is ("repository", "bare repository", …).
	Kind string `json:"kind"`
	// From is where a moved marker was before.
	From string `json:"from,omitempty"`
	// MovedTo is where Ava moved it aside; empty for a moved marker,
	// which is the person's own, unchanged.
	MovedTo string `json:"movedTo,omitempty"`
	// Err says why Ava could not move it aside: it is still in place.
	Err string `json:"error,omitempty"`
}

// String is one line for a tool result or a log.
func (c RepoChange) String() string {
	switch {
	case c.Err != "":
		return fmt.Sprintf("%s %s: %s, and Ava could NOT move it aside (%s): do not run git there before checking it", c.What, c.Kind, c.Path, c.Err)
	case c.What == "moved":
		return fmt.Sprintf("moved %s: %s is now at %s (its contents unchanged)", c.Kind, c.From, c.Path)
	}
	return fmt.Sprintf("%s %s: %s, moved aside to %s", c.What, c.Kind, c.Path, c.MovedTo)
}

// RepoNotice is the note a tool adds to its result when a command
// changed repository markers, or "" when it changed none.
func RepoNotice(changes []RepoChange) string {
	if len(changes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("[Ava: this command created or changed repository files in the workspace. git would run their configuration outside the sandbox, so Ava moved them aside:")
	for _, c := range changes {
		b.WriteString("\n- ")
		b.WriteString(c.String())
	}
	b.WriteString("]")
	return b.String()
}

// scanRepos lists the repository markers beneath root, without following
// a symbolic link, skipping the folders in skip (hidden from the
// sandbox), and bounded by maxScanEntries and maxScanTime. With targets,
// it also records what each repository's configuration names inside the
// workspace.
func scanRepos(root string, skip []string, targets bool) (*repoSnapshot, error) {
	root = filepath.Clean(root)
	s := &repoSnapshot{root: root, markers: map[string]marker{}}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	type dir struct {
		fd  int
		rel string
	}
	stack := []dir{{fd, "."}}
	deadline := time.Now().Add(maxScanTime)
	entries := 0
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.truncated {
			unix.Close(d.fd)
			continue
		}
		subs, n, err := s.scanDir(d.fd, d.rel, skip)
		if err != nil && d.rel == "." {
			unix.Close(d.fd)
			return nil, err
		}
		for _, name := range subs {
			// Opened beneath the folder, never through a link: a folder
			// swapped for a link since it was listed is not followed.
			sfd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
			if err == nil {
				stack = append(stack, dir{sfd, joinRel(d.rel, name)})
			}
		}
		unix.Close(d.fd)
		entries += n
		if entries > maxScanEntries || time.Now().After(deadline) {
			s.truncated = true
		}
	}
	if targets {
		s.addTargets()
	}
	return s, nil
}

// scanDir records the markers in the folder open as fd and returns the
// subfolders to walk and how many entries it held.
func (s *repoSnapshot) scanDir(fd int, rel string, skip []string) ([]string, int, error) {
	list, err := readDir(fd)
	if err != nil {
		return nil, 0, fmt.Errorf("scan %s: %w", s.abs(rel), err)
	}
	types := make(map[string]uint8, len(list))
	for _, e := range list {
		types[e.name] = e.typ
	}
	bare := isBareLayout(types)
	if bare {
		s.record(fd, rel, ".", kindBare)
	}
	if t, ok := types[".git"]; ok {
		kind := kindGitFile
		if t == unix.DT_DIR {
			kind = kindGitDir
		}
		s.record(fd, rel, ".git", kind)
	}
	var subs []string
	for _, e := range list {
		if e.typ != unix.DT_DIR || e.name == ".git" || bare && e.name == "objects" || isSkipped(s.abs(joinRel(rel, e.name)), skip) {
			continue
		}
		subs = append(subs, e.name)
	}
	return subs, len(list), nil
}

// dirent is one entry of a folder: its name and type (unix.DT_*).
type dirent struct {
	name string
	typ  uint8
}

// readDir lists the folder open as fd with getdents64, without a stat
// per entry: the type comes from the entry, or from fstatat where the
// file system does not give it.
func readDir(fd int) ([]dirent, error) {
	var out []dirent
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			typ := b[18]
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					typ = dtOf(st.Mode)
				}
			}
			out = append(out, dirent{string(name), typ})
		}
	}
}

// dtOf is the dirent type of a stat mode.
func dtOf(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFLNK:
		return unix.DT_LNK
	}
	return unix.DT_UNKNOWN
}

// isBareLayout reports whether a folder with these entries is one git
// takes for a repository's own folder: HEAD, and objects and refs, or
// commondir (a linked worktree's folder, whose objects live elsewhere).
func isBareLayout(types map[string]uint8) bool {
	head, ok := types["HEAD"]
	if !ok || head == unix.DT_DIR {
		return false
	}
	if types["objects"] == unix.DT_DIR && types["refs"] == unix.DT_DIR {
		return true
	}
	common, ok := types["commondir"]
	return ok && common != unix.DT_DIR
}

// record adds the marker name of the folder open as fd (at rel), or the
// folder itself for ".".
func (s *repoSnapshot) record(fd int, rel, name string, kind markerKind) {
	var st unix.Stat_t
	var err error
	if name == "." {
		err = unix.Fstat(fd, &st)
	} else {
		err = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return // gone since listed
	}
	s.markers[joinRel(rel, name)] = marker{kind: kind, dev: st.Dev, ino: st.Ino}
}

// addTargets records what each repository's configuration names inside
// the workspace: its hooks folder (core.hooksPath) and included files
// (include.path, includeIf.*.path), as markers when they exist and as
// missing paths when not.
func (s *repoSnapshot) addTargets() {
	for rel, m := range s.markers {
		if m.kind != kindGitDir && m.kind != kindBare {
			continue
		}
		data, err := fsread.File(filepath.Join(s.abs(rel), "config"), maxConfigBytes, "a repository's configuration")
		if err != nil {
			continue
		}
		top := filepath.Dir(s.abs(rel)) // a worktree's top folder
		if m.kind == kindBare {
			top = s.abs(rel)
		}
		for _, t := range configPaths(data) {
			var p string
			switch {
			case strings.HasPrefix(t.value, "~"):
				continue // the person's home: hidden from every sandbox
			case filepath.IsAbs(t.value):
				p = filepath.Clean(t.value)
			case t.key == "hookspath":
				p = filepath.Join(top, t.value)
			default:
				p = filepath.Join(s.abs(rel), t.value)
			}
			trel, err := filepath.Rel(s.root, p)
			if err != nil || trel == "." || trel == ".." || strings.HasPrefix(trel, "../") {
				continue
			}
			if _, ok := s.markers[trel]; ok {
				continue
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				if !slices.Contains(s.missing, trel) {
					s.missing = append(s.missing, trel)
				}
				continue
			}
			s.markers[trel] = marker{kind: kindTarget, dev: st.Dev, ino: st.Ino}
		}
	}
}

// configPath is one path-valued key of a git configuration.
type configPath struct{ key, value string }

// configPaths reads core.hooksPath, include.path and includeIf.*.path
// from a git configuration file: enough of git's syntax for these keys
// (sections, comments, quoted values), not all of it.
func configPaths(data []byte) []configPath {
	var out []configPath
	section := ""
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if l[0] == '[' {
			end := strings.IndexByte(l, ']')
			if end < 0 {
				continue
			}
			head := l[1:end]
			name, sub, _ := strings.Cut(head, " ")
			section = strings.ToLower(name)
			if sub != "" {
				section += " " + sub
			}
			l = strings.TrimSpace(l[end+1:])
			if l == "" {
				continue
			}
		}
		key, value, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if i := strings.IndexAny(value, "#;"); i >= 0 && !strings.HasPrefix(value, "\"") {
			value = strings.TrimSpace(value[:i])
		}
		value = strings.Trim(value, "\"")
		if value == "" {
			continue
		}
		switch {
		case section == "core" && key == "hookspath",
			(section == "include" || strings.HasPrefix(section, "includeif")) && key == "path":
			out = append(out, configPath{key, value})
		}
	}
	return out
}

// protectList marks up to maxProtected markers as kept read-only by the
// sandbox and returns their paths, relative to the workspace. The
// workspace itself and symbolic links cannot be mounted over; top-level
// control entries are kept read-only anyway (protectControl).
func (s *repoSnapshot) protectList() []string {
	var out []string
	rels := make([]string, 0, len(s.markers))
	for rel := range s.markers {
		rels = append(rels, rel)
	}
	// Shallow first: a workspace over the cap keeps its upper repositories.
	slices.SortFunc(rels, func(a, b string) int {
		if d := strings.Count(a, "/") - strings.Count(b, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	for _, rel := range rels {
		m := s.markers[rel]
		var st unix.Stat_t
		link := unix.Lstat(s.abs(rel), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
		switch {
		case rel == "." || link || len(out) >= maxProtected:
			m.sum = s.fingerprint(rel, m.kind)
		case isControlEntry(rel):
			m.protected = true
		default:
			m.protected = true
			out = append(out, rel)
		}
		s.markers[rel] = m
	}
	return out
}

// isControlEntry reports whether rel is one of the workspace's top-level
// control entries, which protectControl keeps read-only.
func isControlEntry(rel string) bool {
	return slices.ContainsFunc(controlEntries, func(c controlEntry) bool { return c.name == rel })
}

// fingerprint hashes what git reads from a marker: a link's target, a
// file's content, or a repository folder's configuration, pointer files
// and hooks.
func (s *repoSnapshot) fingerprint(rel string, kind markerKind) [32]byte {
	h := sha256.New()
	p := s.abs(rel)
	fmt.Fprintf(h, "%d\x00", kind)
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return [32]byte{}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, _ := os.Readlink(p)
		fmt.Fprintf(h, "link\x00%s", target)
	case unix.S_IFREG:
		data, err := fsread.File(p, maxConfigBytes, "a repository file")
		fmt.Fprintf(h, "file\x00%s\x00%v", data, err != nil)
	case unix.S_IFDIR:
		for _, name := range []string{"config", "config.worktree", "commondir", "gitdir"} {
			data, err := fsread.File(filepath.Join(p, name), maxConfigBytes, "a repository file")
			fmt.Fprintf(h, "%s\x00%s\x00%v\x00", name, data, err != nil)
		}
		hooks := p
		if kind != kindTarget {
			hooks = filepath.Join(p, "hooks")
		}
		list, _ := os.ReadDir(hooks)
		for _, e := range list {
			if fi, err := e.Info(); err == nil {
				fmt.Fprintf(h, "hook\x00%s\x00%d\x00%d\x00%o\x00", e.Name(), fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
			}
		}
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// changes compares a later scan with s and returns what the command did,
// each change with the path to move aside ("" for none).
func (s *repoSnapshot) changes(after *repoSnapshot) []pendingChange {
	byEntry := make(map[[2]uint64]string, len(s.markers))
	for rel, m := range s.markers {
		byEntry[[2]uint64{m.dev, m.ino}] = rel
	}
	var out []pendingChange
	for rel, a := range after.markers {
		b, existed := s.markers[rel]
		switch {
		case existed && b.sameEntry(a):
			if !b.protected && b.sum != s.fingerprint(rel, b.kind) {
				out = append(out, pendingChange{rel: rel, what: "changed", kind: b.kind, quarantine: true})
			}
		default:
			from, moved := byEntry[[2]uint64{a.dev, a.ino}]
			if old := s.markers[from]; moved && from != rel && old.kind == a.kind {
				if old.protected || old.sum == s.fingerprint(rel, old.kind) {
					out = append(out, pendingChange{rel: rel, what: "moved", kind: a.kind, from: from})
					continue
				}
			}
			what := "created"
			if existed {
				what = "replaced"
			}
			out = append(out, pendingChange{rel: rel, what: what, kind: a.kind, quarantine: true})
		}
	}
	for rel, b := range s.markers {
		if b.kind != kindTarget {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(s.abs(rel), &st); err != nil {
			continue
		}
		if st.Dev != b.dev || st.Ino != b.ino {
			out = append(out, pendingChange{rel: rel, what: "replaced", kind: kindTarget, quarantine: true})
		} else if !b.protected && b.sum != s.fingerprint(rel, kindTarget) {
			out = append(out, pendingChange{rel: rel, what: "changed", kind: kindTarget, quarantine: true})
		}
	}
	for _, rel := range s.missing {
		if _, err := os.Lstat(s.abs(rel)); err == nil {
			out = append(out, pendingChange{rel: rel, what: "created", kind: kindTarget, quarantine: true})
		}
	}
	slices.SortFunc(out, func(a, b pendingChange) int { return strings.Compare(a.rel, b.rel) })
	return out
}

// pendingChange is one change found, before Ava acts on it.
type pendingChange struct {
	rel, what, from string
	kind            markerKind
	quarantine      bool
}

// apply moves a change's marker aside (a bare repository loses its HEAD,
// not the folder, which may hold the command's ordinary files) and
// returns the report.
func (s *repoSnapshot) apply(c pendingChange, now time.Time) RepoChange {
	out := RepoChange{Path: s.abs(c.rel), What: c.what, Kind: c.kind.String()}
	if c.from != "" {
		out.From = s.abs(c.from)
	}
	if !c.quarantine {
		return out
	}
	rel := c.rel
	if c.kind == kindBare {
		rel = joinRel(rel, "HEAD")
	}
	moved, err := quarantine(s.root, rel, now)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	out.MovedTo = filepath.Join(s.root, moved)
	return out
}

// quarantine renames rel (beneath root, reached without following a
// link) to a name git ignores, never replacing an entry, and returns
// the new path relative to root.
func quarantine(root, rel string, now time.Time) (string, error) {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(rootFd)
	parent, name := filepath.Split(rel)
	pfd := rootFd
	if parent != "" {
		pfd, err = unix.Openat2(rootFd, filepath.Clean(parent), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return "", fmt.Errorf("open %s: %w", parent, err)
		}
		defer unix.Close(pfd)
	}
	base := name + QuarantineTag + now.UTC().Format("20060102T150405Z")
	for i := 0; i < 100; i++ {
		to := base
		if i > 0 {
			to += "-" + strconv.Itoa(i)
		}
		err = unix.Renameat2(pfd, name, pfd, to, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			// The command may have taken the write bit off the folder.
			if unlockDir(pfd) == nil {
				err = unix.Renameat2(pfd, name, pfd, to, unix.RENAME_NOREPLACE)
			}
		}
		if !errors.Is(err, unix.EEXIST) {
			if err != nil {
				return "", fmt.Errorf("rename %s: %w", rel, err)
			}
			return filepath.Join(parent, to), nil
		}
	}
	return "", fmt.Errorf("rename %s: every quarantine name is taken", rel)
}

// unlockDir gives its owner write and search rights on the folder open
// (O_PATH) as fd.
func unlockDir(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	return unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o7777|0o700, 0)
}

func (s *repoSnapshot) abs(rel string) string { return filepath.Join(s.root, rel) }

// joinRel joins a relative folder and a name, "." standing for the root.
func joinRel(rel, name string) string {
	switch {
	case name == ".":
		return rel
	case rel == ".":
		return name
	}
	return rel + "/" + name
}

// isSkipped reports whether path is one of skip or beneath one.
func isSkipped(path string, skip []string) bool {
	for _, d := range skip {
		if d != "" && filepath.IsAbs(d) && within(path, d) {
			return true
		}
	}
	return false
}

// Package files holds Ava's read-only file tools: read_file,
// search_codebase and search_and_read. They work inside one workspace
// folder: the caller's (tool.Caller.Workspace) when the context carries
// one, else Config.Workspace. Nothing outside that folder can be read:
// paths that climb out with "..", absolute paths elsewhere and symlinks
// that lead out are refused. Every open then goes down from an open
// descriptor of the workspace one component at a time without following a
// symlink (tree.go), so a folder swapped for a symlink between the check
// and the open, or during a search's walk, cannot lead outside. Opens
// never block (a FIFO is refused, not waited on), only regular files and
// folders are read, every read is bounded, and Config.Deny (Ava's data
// root) is refused wherever it appears. See docs/security.md.
//
// A problem the model can fix (a bad path, a bad pattern, a binary file)
// is an error Result; a Go error means the workspace itself is unusable.
package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/avaagent/ava/tool"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxReadBytes  = 50_000
	DefaultMaxReadLines  = 2000
	DefaultMaxLineLength = 2000
	DefaultMaxOutput     = 20_000
	DefaultMaxFileSize   = 2 << 20
	DefaultMaxMatches    = 100
	DefaultTimeout       = 30 * time.Second
)

// Config tunes the file tools. Zero fields take the defaults above.
type Config struct {
	// Workspace is the folder the tools work in when the caller in the
	// context names none.
	Workspace string
	// MaxReadBytes caps the text one read_file call returns; longer files
	// are paged.
	MaxReadBytes int
	// MaxReadLines caps the lines one read_file call returns.
	MaxReadLines int
	// MaxLineLength cuts any single line shown longer than this.
	MaxLineLength int
	// MaxOutput caps the text a search call returns.
	MaxOutput int
	// MaxFileSize is the largest file a search reads; larger ones are
	// skipped and counted.
	MaxFileSize int64
	// MaxMatches is the default cap on matches per search.
	MaxMatches int
	// Timeout bounds one call.
	Timeout time.Duration
	// Workers is how many files a search reads at once (runtime.NumCPU()).
	Workers int
	// Deny lists folders the tools never read even inside the workspace,
	// whatever path or symlink leads there: Ava's data root, which holds
	// the roles, memory and logs that control subagents. A workspace
	// inside one is refused as a whole.
	Deny []string
}

func (c Config) withDefaults() Config {
	if c.MaxReadBytes <= 0 {
		c.MaxReadBytes = DefaultMaxReadBytes
	}
	if c.MaxReadLines <= 0 {
		c.MaxReadLines = DefaultMaxReadLines
	}
	if c.MaxLineLength <= 0 {
		c.MaxLineLength = DefaultMaxLineLength
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.MaxFileSize <= 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.MaxMatches <= 0 {
		c.MaxMatches = DefaultMaxMatches
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Workers <= 0 {
		c.Workers = runtime.NumCPU()
	}
	return c
}

// Tools builds the file tools over one Config.
type Tools struct {
	cfg Config
}

// New returns the file tools for cfg.
func New(cfg Config) *Tools {
	return &Tools{cfg: cfg.withDefaults()}
}

// All returns every file tool.
func (t *Tools) All() []tool.Tool {
	return []tool.Tool{t.ReadFile(), t.SearchCodebase(), t.SearchAndRead()}
}

// workspace is a workspace folder as configured (abs) and with its
// symlinks resolved (real). Every path a tool touches is under real.
type workspace struct {
	abs, real string
}

// workspaceFor finds the workspace of this call. A missing or unusable
// workspace is a setup fault, so it is a Go error.
func (t *Tools) workspaceFor(ctx context.Context) (workspace, error) {
	dir := t.cfg.Workspace
	if c, ok := tool.CallerFrom(ctx); ok && c.Workspace != "" {
		dir = c.Workspace
	}
	if dir == "" {
		return workspace{}, errors.New("files: no workspace folder configured")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return workspace{}, fmt.Errorf("files: workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return workspace{}, fmt.Errorf("files: workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return workspace{}, fmt.Errorf("files: workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return workspace{}, fmt.Errorf("files: workspace %s is not a directory", dir)
	}
	for _, d := range t.cfg.Deny {
		if dr, err := filepath.EvalSymlinks(d); err == nil {
			if _, in := within(dr, real); in {
				return workspace{}, pathErrorf("the workspace %s is in %s; refused", abs, errDenied)
			}
		}
	}
	return workspace{abs: abs, real: real}, nil
}

// pathError is a path the model asked for that the tools refuse or cannot
// find; its message is written for the model.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func pathErrorf(format string, args ...any) error {
	return &pathError{msg: fmt.Sprintf(format, args...)}
}

// resolve maps a path the model gave (relative to the workspace, or
// absolute inside it) to its real location and its slash-separated path
// relative to the workspace ("." for the workspace itself). It refuses
// anything that leads outside, lexically or through a symlink.
func (w workspace) resolve(p string) (real, rel string, err error) {
	p = strings.TrimSpace(p)
	if p == "" {
		p = "."
	}
	if strings.ContainsRune(p, 0) {
		return "", "", pathErrorf("path %q contains a NUL byte", p)
	}
	lexical, err := w.lexicalRel(p)
	if err != nil {
		return "", "", err
	}
	real, err = filepath.EvalSymlinks(filepath.Join(w.real, lexical))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", pathErrorf("%s does not exist in the workspace (paths are relative to %s)", p, w.abs)
	}
	if err != nil {
		return "", "", pathErrorf("cannot resolve %s: %v", p, err)
	}
	r, ok := within(w.real, real)
	if !ok {
		return "", "", pathErrorf("%s is a symlink that leads outside the workspace; refused", p)
	}
	return real, r, nil
}

// lexicalRel turns p into a clean path relative to the workspace without
// touching the disk.
func (w workspace) lexicalRel(p string) (string, error) {
	if filepath.IsAbs(p) {
		for _, base := range []string{w.abs, w.real} {
			if r, ok := within(base, filepath.Clean(p)); ok {
				return filepath.FromSlash(r), nil
			}
		}
		return "", pathErrorf("%s is outside the workspace %s; give a path inside it", p, w.abs)
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", pathErrorf("%s leads outside the workspace (..); give a path inside %s", p, w.abs)
	}
	return clean, nil
}

// within reports whether target is base or below it, and target's
// slash-separated path relative to base.
func within(base, target string) (string, bool) {
	r, err := filepath.Rel(base, target)
	if err != nil {
		return "", false
	}
	if r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// callContext bounds a call by the configured timeout.
func (t *Tools) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, t.cfg.Timeout, errTimeout)
}

var errTimeout = errors.New("timed out")

// interrupted explains why ctx ended, for the model.
func (t *Tools) interrupted(ctx context.Context, name string) tool.Result {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return tool.Errorf("%s: timed out after %s; narrow the request and try again", name, t.cfg.Timeout)
	}
	return tool.Errorf("%s: cancelled", name)
}

// truncateOutput cuts s to at most max bytes at a line boundary and says
// where it cut.
func truncateOutput(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := strings.LastIndexByte(s[:max], '\n')
	if cut <= 0 {
		cut = max
	}
	return fmt.Sprintf("%s\n[output truncated: showed %d of %d bytes]", s[:cut], cut, len(s))
}

// cutLine shortens one displayed line to max bytes, saying so; full is the
// line's length before any earlier cut.
func cutLine(line []byte, full, max int) string {
	if len(line) <= max && full <= max {
		return string(line)
	}
	cut := min(max, len(line))
	for cut > 0 && cut < len(line) && !isRuneStart(line[cut]) {
		cut--
	}
	return fmt.Sprintf("%s … [line truncated: %d bytes]", line[:cut], full)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

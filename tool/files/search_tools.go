package files

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/avaagent/ava/tool"
)

// Bounds of the search tools' arguments.
const (
	maxSearchContext      = 10
	maxReadContext        = 50
	defaultReadContext    = 5
	defaultSearchAndReads = 30
	maxResultsLimit       = 1000
)

type searchArgs struct {
	Pattern         string `json:"pattern" jsonschema:"Go RE2 regular expression matched against each line (e.g. func \\w+Handler or TODO|FIXME); escape regex characters such as ( . [ for a literal search"`
	Path            string `json:"path,omitempty" jsonschema:"folder or file to search, relative to the workspace root; default the whole workspace"`
	Glob            string `json:"glob,omitempty" jsonschema:"only search files whose workspace-relative path matches: comma-separated globs like *.go or **/*.md or src/**/*.{ts,tsx}; a leading ! excludes (e.g. *.go,!*_test.go)"`
	Context         int    `json:"context,omitempty" jsonschema:"lines of context to show before and after each match (0-10, default 0)"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema:"match letters regardless of case"`
	MaxResults      int    `json:"max_results,omitempty" jsonschema:"stop after this many matching lines (default 100)"`
}

type searchReadArgs struct {
	Pattern         string `json:"pattern" jsonschema:"Go RE2 regular expression matched against each line; escape regex characters such as ( . [ for a literal search"`
	Path            string `json:"path,omitempty" jsonschema:"folder or file to search, relative to the workspace root; default the whole workspace"`
	Glob            string `json:"glob,omitempty" jsonschema:"only search files whose workspace-relative path matches: comma-separated globs like *.go or **/*.md; a leading ! excludes"`
	Context         int    `json:"context,omitempty" jsonschema:"lines to show before and after each match (1-50, default 5); nearby matches merge into one region"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema:"match letters regardless of case"`
	MaxResults      int    `json:"max_results,omitempty" jsonschema:"stop after this many matching lines (default 30)"`
}

// SearchCodebase returns the search_codebase tool.
func (t *Tools) SearchCodebase() tool.Tool {
	desc := fmt.Sprintf("Search the workspace's files for a regular expression (Go RE2 syntax), like grep -rn. "+
		"Prints one line per match as path:line: text (context lines as path-line- text, groups separated by --). "+
		"Honours .gitignore files and skips .git, binary files and files over %d bytes. "+
		"Narrow with path (a folder or file) and glob (e.g. *.go). Stops after max_results matches "+
		"(default %d) and says so. To see the code around the matches in one call, use search_and_read.",
		t.cfg.MaxFileSize, t.cfg.MaxMatches)
	s := inferSchema[searchArgs]()
	setRange(s, "context", 0, maxSearchContext)
	setRange(s, "max_results", 1, maxResultsLimit)
	return tool.NewFuncWithSchema("search_codebase", desc, s, func(ctx context.Context, a searchArgs) (tool.Result, error) {
		return t.search(ctx, "search_codebase", a, t.formatGrep)
	})
}

// SearchAndRead returns the search_and_read tool.
func (t *Tools) SearchAndRead() tool.Tool {
	desc := "Search the workspace like search_codebase, then show each matching file's matching regions: " +
		"every match with `context` lines around it (default 5), overlapping regions merged, grouped " +
		"per file under a == path == header, matching lines marked with ':' and context lines with '-' " +
		"after the line number. Use it to find and read code in one call; use read_file for whole files."
	s := inferSchema[searchReadArgs]()
	setRange(s, "context", 1, maxReadContext)
	setRange(s, "max_results", 1, maxResultsLimit)
	return tool.NewFuncWithSchema("search_and_read", desc, s, func(ctx context.Context, a searchReadArgs) (tool.Result, error) {
		if a.Context == 0 {
			a.Context = defaultReadContext
		}
		if a.MaxResults == 0 {
			a.MaxResults = defaultSearchAndReads
		}
		return t.search(ctx, "search_and_read", searchArgs(a), t.formatRegions)
	})
}

type formatter func(q *query, st *searchStats) string

// search validates a, runs the search and formats its result.
func (t *Tools) search(ctx context.Context, name string, a searchArgs, format formatter) (tool.Result, error) {
	ws, err := t.workspaceFor(ctx)
	if err != nil {
		return pathResult(name, err)
	}
	ctx, cancel := t.callContext(ctx)
	defer cancel()
	q, res, err := t.buildQuery(ws, name, a)
	if q == nil {
		return res, err
	}
	st, err := t.run(ctx, q)
	if err != nil {
		if ctx.Err() != nil {
			r := t.interrupted(ctx, name)
			r.Output += fmt.Sprintf(" (%d files searched before it stopped)", st.files)
			return r, nil
		}
		return pathResult(name, err)
	}
	return tool.Result{Output: format(q, st)}, nil
}

// buildQuery validates the arguments; on a problem it returns a nil query
// and the result (or error) to give back.
func (t *Tools) buildQuery(ws workspace, name string, a searchArgs) (*query, tool.Result, error) {
	if a.Pattern == "" {
		return nil, tool.Errorf("%s: pattern is empty; give a regular expression to search for", name), nil
	}
	pat, err := compilePattern(a.Pattern, a.CaseInsensitive)
	if err != nil {
		return nil, tool.Errorf("%s: pattern %q is not a valid Go RE2 regular expression: %v", name, a.Pattern, err), nil
	}
	globs, bad, ok := parseGlobs(a.Glob)
	if !ok {
		return nil, tool.Errorf("%s: glob %q is not a valid pattern", name, bad), nil
	}
	real, rel, err := ws.resolve(a.Path)
	if err != nil {
		res, err := pathResult(name, err)
		return nil, res, err
	}
	// Lstat of a resolved path: no symlink left to follow, and no open,
	// so a FIFO cannot block.
	fi, err := os.Lstat(real)
	if err != nil {
		return nil, tool.Errorf("%s: cannot stat %s: %v", name, a.Path, err), nil
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, tool.Errorf("%s: %s is %s", name, a.Path, (&specialError{kind: modeKind(fi.Mode())}).Error()), nil
	}
	if rel == "." {
		rel = ""
	}
	maxMatches := a.MaxResults
	if maxMatches <= 0 {
		maxMatches = t.cfg.MaxMatches
	}
	q := &query{
		ws: ws, startRel: rel, startFile: !fi.IsDir(),
		pat: pat, globs: globs, context: a.Context, maxMatches: maxMatches,
	}
	return q, tool.Result{}, nil
}

// formatGrep prints matches as grep -n does: path:line: text for a match,
// path-line- text for context, "--" between groups.
func (t *Tools) formatGrep(q *query, st *searchStats) string {
	if st.matches == 0 {
		return noMatches(q, st)
	}
	var b []byte
	printed := false
	for _, h := range st.hits {
		for j, l := range h.lines {
			if q.context > 0 && printed && (j == 0 || l.no != h.lines[j-1].no+1) {
				b = append(b, "--\n"...)
			}
			b = appendLine(b, h.path, l)
			printed = true
		}
	}
	return truncateOutput(string(b), t.cfg.MaxOutput) + "\n" + summary(q, st)
}

// formatRegions prints matches grouped per file under a header, each line
// by its number alone.
func (t *Tools) formatRegions(q *query, st *searchStats) string {
	if st.matches == 0 {
		return noMatches(q, st)
	}
	var b []byte
	for i, h := range st.hits {
		if i > 0 {
			b = append(b, '\n')
		}
		b = fmt.Appendf(b, "== %s (%s) ==\n", h.path, plural(h.matches, "match", "matches"))
		for j, l := range h.lines {
			if j > 0 && l.no != h.lines[j-1].no+1 {
				b = append(b, "--\n"...)
			}
			b = appendLine(b, "", l)
		}
	}
	return truncateOutput(string(b), t.cfg.MaxOutput) + "\n" + summary(q, st)
}

// appendLine prints one line: after path in grep style, or with a
// right-aligned number when path is empty.
func appendLine(b []byte, path string, l hitLine) []byte {
	sep := byte('-')
	if l.match {
		sep = ':'
	}
	if path != "" {
		b = append(b, path...)
		b = append(b, sep)
		b = strconv.AppendInt(b, int64(l.no), 10)
	} else {
		num := strconv.Itoa(l.no)
		for range 6 - len(num) {
			b = append(b, ' ')
		}
		b = append(b, num...)
	}
	b = append(b, sep, ' ')
	b = append(b, l.text...)
	return append(b, '\n')
}

// summary is the last line of a search result: counts, skips, the cap.
func summary(q *query, st *searchStats) string {
	s := fmt.Sprintf("[%s in %s; %s searched%s]",
		plural(st.matches, "match", "matches"), plural(len(st.hits), "file", "files"),
		plural(st.files, "file", "files"), skipped(st))
	if st.capped {
		s = fmt.Sprintf("[stopped at the cap of %d matches (in %s; %s searched so far%s): "+
			"there are more; narrow the search with path or glob, or raise max_results]",
			q.maxMatches, plural(len(st.hits), "file", "files"), plural(st.files, "file", "files"), skipped(st))
	}
	return s
}

func noMatches(q *query, st *searchStats) string {
	where := "the workspace"
	if q.startRel != "" {
		where = q.startRel
	}
	return fmt.Sprintf("No matches for %q in %s (%s searched%s).",
		q.pat.line.String(), where, plural(st.files, "file", "files"), skipped(st))
}

func skipped(st *searchStats) string {
	var parts []string
	if st.binary > 0 {
		parts = append(parts, fmt.Sprintf("%d binary", st.binary))
	}
	if st.large > 0 {
		parts = append(parts, fmt.Sprintf("%d too large", st.large))
	}
	if st.unreadable > 0 {
		parts = append(parts, fmt.Sprintf("%d unreadable", st.unreadable))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; skipped " + strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

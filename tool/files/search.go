package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/tool"
)

// searchLineLength caps one line shown by the search tools.
const searchLineLength = 500

// errCapReached stops a search that has found enough matches.
var errCapReached = errors.New("match cap reached")

// query is one search, validated: where, what, and how much.
type query struct {
	ws         workspace
	startRel   string // start relative to the workspace, "" for the root
	startFile  bool   // start is a single file
	pat        pattern
	globs      *globSet
	context    int
	maxMatches int
}

// pattern is a compiled search pattern with its prefilters.
type pattern struct {
	line  *regexp.Regexp // what a matching line must match
	whole *regexp.Regexp // multi-line form run over a whole file first; nil if unsafe
	lit   []byte         // a literal every match contains (lower case if fold); nil if none
	fold  bool
}

// compilePattern compiles a Go RE2 pattern and derives its prefilters.
func compilePattern(expr string, ignoreCase bool) (pattern, error) {
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return pattern{}, err
	}
	p := pattern{line: re}
	if syn, err := syntax.Parse(expr, syntax.Perl); err == nil {
		lit, fold := requiredLiteral(syn.Simplify())
		if fold && !foldableASCII(lit) {
			lit = ""
		}
		if len(lit) > 0 {
			p.lit, p.fold = []byte(lit), fold
			if fold {
				p.lit = bytes.ToLower(p.lit)
			}
		}
	}
	if syn, err := syntax.Parse("(?m)"+expr, syntax.Perl); err == nil && !hasTextAnchor(syn) {
		p.whole, _ = regexp.Compile("(?m)" + expr)
	}
	return p, nil
}

// requiredLiteral finds the longest literal string that every match of re
// contains, and whether it matches case-insensitively.
func requiredLiteral(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best, bestFold := "", false
		for _, sub := range re.Sub {
			if l, f := requiredLiteral(sub); len(l) > len(best) {
				best, bestFold = l, f
			}
		}
		return best, bestFold
	}
	return "", false
}

// foldableASCII reports whether an ASCII lower-casing prefilter finds
// every case-insensitive match of lit. Go folds k to the Kelvin sign and
// s to the long s, so those letters (and any non-ASCII) disqualify it.
func foldableASCII(lit string) bool {
	for i := 0; i < len(lit); i++ {
		c := lit[i] | 0x20
		if lit[i] >= utf8.RuneSelf || c == 'k' || c == 's' {
			return false
		}
	}
	return true
}

// hasTextAnchor reports whether re uses \A or \z, which mean something
// else for a whole file than for one line.
func hasTextAnchor(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, sub := range re.Sub {
		if hasTextAnchor(sub) {
			return true
		}
	}
	return false
}

// fileHit is what one file contributed to a search.
type fileHit struct {
	path    string    // slash-separated, relative to the workspace
	matches int       // how many of lines are matches
	lines   []hitLine // matching and context lines, ascending
}

// hitLine is one line to show.
type hitLine struct {
	no    int
	text  string
	match bool
}

// keepMatches drops all but the first keep matches, and the context lines
// that only later matches needed.
func (h *fileHit) keepMatches(keep, context int) {
	last, seen := 0, 0
	for _, l := range h.lines {
		if l.match {
			if seen++; seen == keep {
				last = l.no
				break
			}
		}
	}
	out := h.lines[:0]
	for _, l := range h.lines {
		if l.no > last+context {
			break
		}
		if l.no > last {
			l.match = false
		}
		out = append(out, l)
	}
	h.lines, h.matches = out, keep
}

// scanResult is one file's outcome.
type scanResult struct {
	hit                       *fileHit
	binary, large, unreadable bool
}

// searchStats describes a finished search.
type searchStats struct {
	hits                      []*fileHit
	matches, files            int
	binary, large, unreadable int
	capped                    bool
}

// run opens the workspace and searches q's tree with a walker feeding a
// pool of workers, and collects their results in walk order so the
// output is deterministic.
// Once more than maxMatches matches are known in that order, it stops the
// walk and the workers.
func (t *Tools) run(ctx context.Context, q *query) (*searchStats, error) {
	root, err := t.openTree(q.ws)
	if err != nil {
		return &searchStats{}, err
	}
	defer root.release()
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan *batch, 2*t.cfg.Workers)
	results := make(chan *batch, 2*t.cfg.Workers)
	w := &walker{q: q, root: root}
	var wg sync.WaitGroup
	var walkErr error
	wg.Go(func() {
		defer close(jobs)
		walkErr = w.run(sctx, jobs)
	})
	var workers sync.WaitGroup
	for range t.cfg.Workers {
		workers.Go(func() {
			sc := scanner{q: q, maxSize: t.cfg.MaxFileSize}
			for b := range jobs {
				if sctx.Err() != nil {
					b.dir.release()
					continue
				}
				sc.scanBatch(b)
				results <- b
			}
		})
	}
	wg.Go(func() {
		workers.Wait()
		close(results)
	})
	st := collect(ctx, q, results, func() { cancel(errCapReached) })
	wg.Wait()
	st.unreadable += w.unreadable
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if isPathError(walkErr) {
		return st, walkErr
	}
	if walkErr != nil && !errors.Is(context.Cause(sctx), errCapReached) {
		return st, walkErr
	}
	return st, nil
}

// collect gathers batches in walk order until results closes, calling
// stop once more than q.maxMatches matches are in.
func collect(ctx context.Context, q *query, results <-chan *batch, stop func()) *searchStats {
	st := &searchStats{}
	pending := map[int]*batch{}
	next := 0
	lastNote := time.Now()
	for b := range results {
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			for _, r := range b.results {
				if st.capped {
					break
				}
				if st.add(r, q); st.capped {
					stop()
				}
			}
			if time.Since(lastNote) >= time.Second {
				lastNote = time.Now()
				tool.Progress(ctx, fmt.Sprintf("searched %d files, %d matches so far", st.files, st.matches))
			}
		}
	}
	return st
}

// add counts one file's result, keeping at most q.maxMatches matches.
func (st *searchStats) add(r scanResult, q *query) {
	st.files++
	switch {
	case r.binary:
		st.binary++
	case r.large:
		st.large++
	case r.unreadable:
		st.unreadable++
	case r.hit != nil:
		if room := q.maxMatches - st.matches; r.hit.matches > room {
			r.hit.keepMatches(room, q.context)
			st.capped = true
		}
		if r.hit.matches > 0 {
			st.hits = append(st.hits, r.hit)
			st.matches += r.hit.matches
		}
	}
}

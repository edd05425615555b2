package files

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// This file holds a gitignore matcher (gitignore(5)): blank lines and
// "#" comments are skipped, "!" re-includes, a trailing "/" matches only
// directories, a pattern with a "/" before its end is anchored to its
// .gitignore's folder while one without matches a name at any depth, and
// "*", "?", "[...]" and "**" glob as git does. Within one file the last
// matching pattern wins; a deeper .gitignore overrides a shallower one.
// As in git, nothing below an ignored directory can be re-included: the
// walk never enters it. The same compiler serves the glob filter of the
// search tools, which also understands "{a,b}".

// globRule is one compiled pattern.
type globRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// ignoreFile is the rules of one .gitignore; base is its folder relative
// to the workspace ("" for the root), slash-separated.
type ignoreFile struct {
	base  string
	rules []globRule
}

// ignoreStack is the .gitignore files in force in one folder, shallowest
// first. It is never modified, only extended into a copy.
type ignoreStack []*ignoreFile

// with returns the stack extended by f.
func (s ignoreStack) with(f *ignoreFile) ignoreStack {
	if f == nil || len(f.rules) == 0 {
		return s
	}
	out := make(ignoreStack, len(s), len(s)+1)
	copy(out, s)
	return append(out, f)
}

// ignored reports whether rel (slash-separated, relative to the
// workspace) is ignored.
func (s ignoreStack) ignored(rel string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		f := s[i]
		sub := rel
		if f.base != "" {
			var ok bool
			sub, ok = strings.CutPrefix(rel, f.base+"/")
			if !ok {
				continue
			}
		}
		for j := len(f.rules) - 1; j >= 0; j-- {
			r := f.rules[j]
			if r.dirOnly && !isDir {
				continue
			}
			if r.re.MatchString(sub) {
				return !r.negate
			}
		}
	}
	return false
}

// parseIgnore compiles the text of a .gitignore found in folder base.
func parseIgnore(base string, data []byte) *ignoreFile {
	f := &ignoreFile{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if r, ok := compileGitignoreLine(sc.Text()); ok {
			f.rules = append(f.rules, r)
		}
	}
	return f
}

// compileGitignoreLine compiles one .gitignore line; false for blank lines,
// comments and patterns that cannot match anything.
func compileGitignoreLine(line string) (globRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimUnescapedSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return globRule{}, false
	}
	var r globRule
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	}
	return compileGlob(line, r, false)
}

// compileGlob compiles pattern p (without a leading "!") into r.
func compileGlob(p string, r globRule, braces bool) (globRule, bool) {
	if strings.HasSuffix(p, "/") {
		r.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	if p == "" {
		return globRule{}, false
	}
	anchored := strings.Contains(p, "/")
	p = strings.TrimPrefix(p, "/")
	var b strings.Builder
	b.WriteString("^")
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	translateGlob(&b, p, braces)
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return globRule{}, false
	}
	r.re = re
	return r, true
}

// translateGlob writes the regular expression for glob p.
func translateGlob(b *strings.Builder, p string, braces bool) {
	depth := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case c == '*' && strings.HasPrefix(p[i:], "**"):
			i += writeDoubleStar(b, p, i)
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			if n := writeClass(b, p[i:]); n > 0 {
				i += n - 1
			} else {
				b.WriteString(`\[`)
			}
		case braces && c == '{':
			depth++
			b.WriteString("(?:")
		case braces && c == '}' && depth > 0:
			depth--
			b.WriteString(")")
		case braces && c == ',' && depth > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	for ; depth > 0; depth-- {
		b.WriteString(")")
	}
}

// writeDoubleStar writes "**" found at p[i:] and returns how many bytes
// past the first '*' it consumed. "**/" at the start or after a "/"
// matches zero or more folders; a trailing "/**" matches everything
// inside; any other "**" is a plain "*".
func writeDoubleStar(b *strings.Builder, p string, i int) int {
	atSegmentStart := i == 0 || p[i-1] == '/'
	rest := p[i+2:]
	switch {
	case atSegmentStart && strings.HasPrefix(rest, "/"):
		b.WriteString("(?:.*/)?")
		return 2
	case atSegmentStart && rest == "":
		b.WriteString(".*")
		return 1
	default:
		b.WriteString("[^/]*")
		return 1
	}
}

// writeClass writes the bracket expression at the start of p and returns
// its length, or 0 if p has no closing bracket.
func writeClass(b *strings.Builder, p string) int {
	j := 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != ']' {
		if p[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(p) {
		return 0
	}
	body := p[1:j]
	b.WriteString("[")
	if body != "" && (body[0] == '!' || body[0] == '^') {
		b.WriteString("^")
		body = body[1:]
	}
	for k := 0; k < len(body); k++ {
		c := body[k]
		switch {
		case c == '\\' && k+1 < len(body):
			k++
			b.WriteString(regexp.QuoteMeta(body[k : k+1]))
		case c == '-':
			b.WriteByte('-')
		case c == '[' || c == ']' || c == '^':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteString(regexp.QuoteMeta(body[k : k+1]))
		}
	}
	b.WriteString("]")
	return j + 1
}

// trimUnescapedSpace drops trailing spaces unless the last is escaped.
func trimUnescapedSpace(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// globSet is the search tools' file filter: comma-separated globs matched
// against the slash-separated path from the workspace root, a "!" prefix
// excluding. A file passes if the last glob that matches it includes it;
// with only exclusions, unmatched files pass.
type globSet struct {
	rules        []globRule
	includeCount int
}

// parseGlobs compiles a comma-separated glob list; ok is false for a glob
// that cannot be compiled, named in bad.
func parseGlobs(list string) (gs *globSet, bad string, ok bool) {
	gs = &globSet{}
	for _, g := range splitOutsideBraces(list) {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		var r globRule
		if strings.HasPrefix(g, "!") {
			r.negate = true
			g = g[1:]
		} else {
			gs.includeCount++
		}
		rule, ok := compileGlob(g, r, true)
		if !ok {
			return nil, g, false
		}
		gs.rules = append(gs.rules, rule)
	}
	if len(gs.rules) == 0 {
		return nil, "", true
	}
	return gs, "", true
}

// match reports whether the file at rel passes the filter.
func (gs *globSet) match(rel string) bool {
	if gs == nil {
		return true
	}
	for i := len(gs.rules) - 1; i >= 0; i-- {
		if gs.rules[i].re.MatchString(rel) {
			return !gs.rules[i].negate
		}
	}
	return gs.includeCount == 0
}

// splitOutsideBraces splits s at commas that are not inside {...}.
func splitOutsideBraces(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

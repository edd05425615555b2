package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the module root, from this package's folder.
const root = "../.."

var (
	// linkRE is a Markdown link or image: [label](target "title").
	linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpanRE is inline code, whose text is not a link.
	codeSpanRE = regexp.MustCompile("`[^`\n]*`")
	// headingRE is an ATX heading.
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// TestRelativeLinksResolve checks every relative link of README.md and
// docs/*.md: the file it names exists, and its #fragment, if any, is a
// heading of that file (GitHub's anchors).
func TestRelativeLinksResolve(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{filepath.Join(root, "README.md")}, docs...)
	checked := 0
	for _, file := range files {
		for _, link := range links(t, file) {
			checked++
			if err := check(file, link); err != nil {
				t.Errorf("%s: link %s: %v", rel(file), link, err)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found in %d files; is the link pattern right?", checked, len(files))
	}
}

// TestAnchors pins GitHub's heading anchors, which check relies on.
func TestAnchors(t *testing.T) {
	for heading, want := range map[string]string{
		"The daemon (`ava serve`)":                         "the-daemon-ava-serve",
		"A run's figures":                                  "a-runs-figures",
		"PostgreSQL (`AVA_DATABASE_URL`)":                  "postgresql-ava_database_url",
		"Fencing: a stale owner writes nothing (issue 25)": "fencing-a-stale-owner-writes-nothing-issue-25",
		"`/etc` is an allow-list":                          "etc-is-an-allow-list",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// links returns the relative link targets of a Markdown file, outside
// code blocks and code spans.
func links(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, para := range strings.Split(withoutCode(string(data)), "\n\n") {
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(para, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, target)
		}
	}
	return out
}

// withoutCode blanks fenced code blocks, keeping the line count.
func withoutCode(text string) string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// check resolves one link target from the file it is in.
func check(from, target string) error {
	path, fragment, _ := strings.Cut(target, "#")
	file := from
	if path != "" {
		file = filepath.Join(filepath.Dir(from), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return fmt.Errorf("no such file %s", rel(file))
		}
	}
	if fragment == "" || !strings.HasSuffix(file, ".md") {
		return nil
	}
	anchors, err := headings(file)
	if err != nil {
		return err
	}
	if !anchors[fragment] {
		return fmt.Errorf("%s has no heading with anchor #%s", rel(file), fragment)
	}
	return nil
}

// headings returns the anchors of a Markdown file's headings, with
// GitHub's -1, -2 suffixes for repeated ones.
func headings(file string) (map[string]bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(withoutCode(string(data)), "\n") {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := anchor(m[1])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out, nil
}

// anchor is GitHub's anchor of a heading: lower case, letters, digits,
// '-' and '_' kept, spaces made '-', everything else dropped.
func anchor(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// rel names a file from the module root.
func rel(file string) string {
	if r, err := filepath.Rel(root, file); err == nil {
		return filepath.ToSlash(r)
	}
	return file
}

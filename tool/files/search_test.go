package files

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSearchCodebaseGrepFormat(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"b.go":       "package b\nfunc Hello() {}\n",
		"a/x.go":     "// Hello there\nnothing\nhello lower\n",
		"a.txt":      "Hello from a.txt",
		"z/deep.txt": "no match here\n",
	})
	tools := New(Config{Workspace: dir, Workers: 4})
	res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "Hel+o"})
	want := "a/x.go:1: // Hello there\n" +
		"a.txt:1: Hello from a.txt\n" +
		"b.go:2: func Hello() {}\n" +
		"\n[3 matches in 3 files; 4 files searched]"
	if res.IsError || res.Output != want {
		t.Fatalf("got:\n%s\nwant:\n%s", res.Output, want)
	}
}

func TestSearchCodebaseHonoursGitignore(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		".gitignore":           "*.log\nbuild/\n!keep.log\n",
		"app.log":              "needle\n",
		"keep.log":             "needle\n",
		"build/out.txt":        "needle\n",
		"src/main.go":          "needle\n",
		"src/.gitignore":       "gen_*.go\n",
		"src/gen_x.go":         "needle\n",
		"src/sub/gen_y.go":     "needle\n",
		"other/gen_z.go":       "needle\n",
		".git/config":          "needle\n",
		".git/info/exclude":    "private.txt\n",
		"private.txt":          "needle\n",
		"vendor/.gitignore":    "*\n!.gitignore\n",
		"vendor/lib/thing.txt": "needle\n",
	})
	mustSymlink(t, filepath.Join(dir, "src"), filepath.Join(dir, "srclink"))
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle"})
	got := matchPaths(res.Output)
	want := []string{"keep.log", "other/gen_z.go", "src/main.go"}
	if !slices.Equal(got, want) {
		t.Fatalf("searched %v, want %v\n%s", got, want, res.Output)
	}
	// A search of a subfolder obeys the .gitignore files above it.
	res = call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "path": "src/sub"})
	if !strings.HasPrefix(res.Output, "No matches") {
		t.Fatalf("subfolder search ignored the parent .gitignore:\n%s", res.Output)
	}
	// An explicitly named file is searched even if ignored.
	res = call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "path": "app.log"})
	if got := matchPaths(res.Output); !slices.Equal(got, []string{"app.log"}) {
		t.Fatalf("explicit file: %s", res.Output)
	}
}

func TestSearchCodebaseGlobAndCase(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a.go":        "TODO one\n",
		"a_test.go":   "todo two\n",
		"docs/x.md":   "ToDo three\n",
		"docs/y.txt":  "TODO four\n",
		"kelvin.txt":  "\u212Aelvin\n",
		"notes/z.MD":  "TODO five\n",
		"deep/k/n.md": "TODO six\n",
	})
	tools := New(Config{Workspace: dir})
	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"pattern": "TODO"}, []string{"a.go", "deep/k/n.md", "docs/y.txt", "notes/z.MD"}},
		{map[string]any{"pattern": "todo", "case_insensitive": true}, []string{"a.go", "a_test.go", "deep/k/n.md", "docs/x.md", "docs/y.txt", "notes/z.MD"}},
		{map[string]any{"pattern": "todo", "case_insensitive": true, "glob": "*.go,!*_test.go"}, []string{"a.go"}},
		{map[string]any{"pattern": "todo", "case_insensitive": true, "glob": "**/*.md"}, []string{"deep/k/n.md", "docs/x.md"}},
		{map[string]any{"pattern": "todo", "case_insensitive": true, "glob": "docs/*"}, []string{"docs/x.md", "docs/y.txt"}},
		{map[string]any{"pattern": "kelvin", "case_insensitive": true}, []string{"kelvin.txt"}},
	}
	for _, tt := range tests {
		res := call(t, t.Context(), tools.SearchCodebase(), tt.args)
		if got := matchPaths(res.Output); !slices.Equal(got, tt.want) {
			t.Errorf("%v: got %v, want %v\n%s", tt.args, got, tt.want, res.Output)
		}
	}
}

func TestSearchCodebaseContext(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": "1\n2\nhit 3\n4\nhit 5\n6\n7\n8\n9\nhit 10\n11\n"})
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "^hit", "context": 1})
	want := "f.txt-2- 2\nf.txt:3: hit 3\nf.txt-4- 4\nf.txt:5: hit 5\nf.txt-6- 6\n--\n" +
		"f.txt-9- 9\nf.txt:10: hit 10\nf.txt-11- 11\n\n[3 matches in 1 file; 1 file searched]"
	if res.Output != want {
		t.Fatalf("got:\n%s\nwant:\n%s", res.Output, want)
	}
}

func TestSearchAndReadMergesRegions(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"f.txt": numbered(1, 30),
		"g.txt": "line 2 only\n",
	})
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.SearchAndRead(), map[string]any{"pattern": `^line (2|4|20)\b`, "context": 2})
	want := "== f.txt (3 matches) ==\n" +
		"     1- line 1\n     2: line 2\n     3- line 3\n     4: line 4\n     5- line 5\n     6- line 6\n--\n" +
		"    18- line 18\n    19- line 19\n    20: line 20\n    21- line 21\n    22- line 22\n" +
		"\n== g.txt (1 match) ==\n     1: line 2 only\n" +
		"\n[4 matches in 2 files; 2 files searched]"
	if res.IsError || res.Output != want {
		t.Fatalf("got:\n%s\nwant:\n%s", res.Output, want)
	}
}

func TestSearchCapIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("d%d/f%02d.txt", i%3, i)] = "match\nmatch\nmatch\n"
	}
	writeTree(t, dir, files)
	tools := New(Config{Workspace: dir, Workers: 8})
	var first string
	for i := range 5 {
		res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "match", "max_results": 40})
		if i == 0 {
			first = res.Output
			continue
		}
		if res.Output != first {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, res.Output, first)
		}
	}
	lines := strings.Split(first, "\n")
	if n := len(lines) - 2; n != 40 {
		t.Fatalf("%d match lines, want 40", n)
	}
	if lines[0] != "d0/f00.txt:1: match" || lines[39] != "d0/f39.txt:1: match" {
		t.Fatalf("not the first 40 in path order: %q … %q", lines[0], lines[39])
	}
	if !strings.Contains(lines[len(lines)-1], "stopped at the cap of 40 matches") {
		t.Fatalf("footer does not say it stopped: %q", lines[len(lines)-1])
	}
	// Exactly the cap is not "stopped".
	res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "match", "max_results": 180})
	if strings.Contains(res.Output, "stopped") || !strings.Contains(res.Output, "[180 matches in 60 files") {
		t.Fatalf("footer: %s", tail(res.Output))
	}
}

func TestSearchSkipsBinaryAndLarge(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"bin.dat": "needle\x00\x01",
		"big.txt": strings.Repeat("needle\n", 200),
		"ok.txt":  "needle\n",
	})
	tools := New(Config{Workspace: dir, MaxFileSize: 1000})
	res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle"})
	want := "ok.txt:1: needle\n\n[1 match in 1 file; 3 files searched; skipped 1 binary, 1 too large]"
	if res.Output != want {
		t.Fatalf("got %q, want %q", res.Output, want)
	}
}

func TestSearchBadArguments(t *testing.T) {
	dir := t.TempDir()
	tools := New(Config{Workspace: dir})
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "a("}, "not a valid Go RE2 regular expression"},
		{map[string]any{"pattern": ""}, "pattern is empty"},
		{map[string]any{"pattern": "x", "path": "../"}, "leads outside the workspace"},
		{map[string]any{"pattern": "x", "path": "nope"}, "does not exist"},
		{map[string]any{"pattern": "x", "context": 11}, "invalid arguments"},
		{map[string]any{"pattern": "x", "max_results": 0, "bogus": true}, "invalid arguments"},
	}
	for _, tt := range tests {
		res := call(t, t.Context(), tools.SearchCodebase(), tt.args)
		if !res.IsError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("%v: got %+v, want error containing %q", tt.args, res, tt.want)
		}
	}
}

func TestSearchOutputCap(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": strings.Repeat("needle "+strings.Repeat("x", 90)+"\n", 50)})
	tools := New(Config{Workspace: dir, MaxOutput: 1000})
	res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle"})
	if !strings.Contains(res.Output, "[output truncated: showed ") || !strings.Contains(res.Output, "[50 matches in 1 file") {
		t.Fatalf("no truncation marker: %s", tail(res.Output))
	}
	if len(res.Output) > 1200 {
		t.Fatalf("output %d bytes, cap 1000", len(res.Output))
	}
}

func TestSearchCancelledAndTimeout(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": "needle\n"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := call(t, ctx, New(Config{Workspace: dir}).SearchCodebase(), map[string]any{"pattern": "needle"})
	if !res.IsError || !strings.Contains(res.Output, "cancelled") {
		t.Fatalf("cancelled: %+v", res)
	}
	res = call(t, t.Context(), New(Config{Workspace: dir, Timeout: time.Nanosecond}).SearchCodebase(), map[string]any{"pattern": "needle"})
	if !res.IsError || !strings.Contains(res.Output, "timed out") {
		t.Fatalf("timeout: %+v", res)
	}
}

// TestSearchMatchesNaiveScan checks the prefilters against a plain
// line-by-line regexp scan on random text.
func TestSearchMatchesNaiveScan(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"foo", "Foo", "FOO", "bar", "baz", "kelvin", "\u212Aelvin", "ſecret", "secret", "x", "", "  ", "é", "foobar", "(", "."}
	files := map[string]string{}
	for i := range 40 {
		var b strings.Builder
		for range rng.IntN(30) {
			for range rng.IntN(6) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(" \t"[rng.IntN(2)])
			}
			b.WriteString([]string{"\n", "\r\n"}[rng.IntN(2)])
		}
		files[fmt.Sprintf("d%d/f%d.txt", i%4, i)] = b.String()
	}
	writeTree(t, dir, files)
	tools := New(Config{Workspace: dir, Workers: 3})
	patterns := []struct {
		expr string
		fold bool
	}{
		{"foo", false}, {"foo", true}, {"^foo", false}, {"bar$", false}, {"foo(bar)+", false},
		{"kelvin", true}, {"secret", true}, {`\bx\b`, false}, {"ba[rz]", true}, {"^$", false},
		{`\(`, false}, {"é", true}, {"(foo|baz) ", false}, {`\Afoo`, false}, {"o{2,}", false},
	}
	for _, p := range patterns {
		args := map[string]any{"pattern": p.expr, "case_insensitive": p.fold, "max_results": 1000}
		res := call(t, t.Context(), tools.SearchCodebase(), args)
		got := matchLines(res.Output)
		want := naiveSearch(t, dir, files, p.expr, p.fold)
		if !slices.Equal(got, want) {
			t.Errorf("pattern %q fold %v: got %d matches, want %d\ngot  %v\nwant %v", p.expr, p.fold, len(got), len(want), got, want)
		}
	}
}

func naiveSearch(t *testing.T, dir string, files map[string]string, expr string, fold bool) []string {
	if fold {
		expr = "(?i)" + expr
	}
	re := regexp.MustCompile(expr)
	var out []string
	for name, content := range files {
		lines := strings.Split(content, "\n")
		if strings.HasSuffix(content, "\n") {
			lines = lines[:len(lines)-1]
		}
		for i, l := range lines {
			if re.MatchString(strings.TrimSuffix(l, "\r")) {
				out = append(out, fmt.Sprintf("%s:%d", name, i+1))
			}
		}
	}
	slices.Sort(out)
	return out
}

// matchPaths lists the distinct files in grep-style output.
func matchPaths(out string) []string {
	var paths []string
	for _, l := range matchLines(out) {
		p, _, _ := strings.Cut(l, ":")
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths
}

// matchLines lists "path:line" of each match in grep-style output, sorted.
func matchLines(out string) []string {
	re := regexp.MustCompile(`(?m)^([^:\n]+):(\d+): `)
	var got []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1]+":"+m[2])
	}
	slices.Sort(got)
	return got
}

func TestSearchUnreadableCounted(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": "needle\n", "locked.txt": "needle\n"})
	if err := os.Chmod(filepath.Join(dir, "locked.txt"), 0); err != nil {
		t.Fatal(err)
	}
	res := call(t, t.Context(), New(Config{Workspace: dir}).SearchCodebase(), map[string]any{"pattern": "needle"})
	if !strings.Contains(res.Output, "1 unreadable") {
		t.Fatalf("got %s", res.Output)
	}
}

func TestSearchContextAcrossFilesAndCap(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a.txt": "hit a1\nctx\n",
		"b.txt": "hit b1\nhit b2\nhit b3\nctx\n",
	})
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "^hit", "context": 1, "max_results": 2})
	want := "a.txt:1: hit a1\na.txt-2- ctx\n--\nb.txt:1: hit b1\nb.txt-2- hit b2\n\n" +
		"[stopped at the cap of 2 matches (in 2 files; 2 files searched so far): there are more; narrow the search with path or glob, or raise max_results]"
	if res.Output != want {
		t.Fatalf("got:\n%s\nwant:\n%s", res.Output, want)
	}
}

package files

import "testing"

func TestGitignoreRules(t *testing.T) {
	tests := []struct {
		pattern string
		path    string
		isDir   bool
		want    bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "deep/er/a.log", false, true},
		{"*.log", "a.logx", false, false},
		{"build/", "build", true, true},
		{"build/", "x/build", true, true},
		{"build/", "build", false, false},
		{"/build", "build", true, true},
		{"/build", "x/build", true, false},
		{"doc/*.txt", "doc/a.txt", false, true},
		{"doc/*.txt", "doc/sub/a.txt", false, false},
		{"doc/*.txt", "x/doc/a.txt", false, false},
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo/bar", "a/foo/bar", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**", "a/x/y", false, true},
		{"a/**", "a", true, false},
		{"fo?.go", "foo.go", false, true},
		{"fo?.go", "fo/.go", false, false},
		{"[abc].txt", "b.txt", false, true},
		{"[!abc].txt", "b.txt", false, false},
		{"[!abc].txt", "d.txt", false, true},
		{"[a-c]x", "bx", false, true},
		{`\#notcomment`, "#notcomment", false, true},
		{`\!bang`, "!bang", false, true},
		{"trailing   ", "trailing", false, true},
		{"a.b", "axb", false, false},
		{"foo*bar", "foo/x/bar", false, false},
	}
	for _, tt := range tests {
		r, ok := compileGitignoreLine(tt.pattern)
		if !ok {
			t.Errorf("%q did not compile", tt.pattern)
			continue
		}
		stack := ignoreStack{{rules: []globRule{r}}}
		if got := stack.ignored(tt.path, tt.isDir); got != tt.want {
			t.Errorf("pattern %q, path %q (dir %v): ignored = %v, want %v (re %s)", tt.pattern, tt.path, tt.isDir, got, tt.want, r.re)
		}
	}
}

func TestGitignoreSkipsCommentsAndBlanks(t *testing.T) {
	f := parseIgnore("", []byte("# comment\n\n   \n*.tmp\r\n"))
	if len(f.rules) != 1 {
		t.Fatalf("got %d rules, want 1", len(f.rules))
	}
}

func TestGitignorePrecedence(t *testing.T) {
	root := parseIgnore("", []byte("*.log\n!keep.log\nsecret/\n"))
	sub := parseIgnore("sub", []byte("!debug.log\nlocal.txt\n"))
	stack := ignoreStack{}.with(root).with(sub)
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"a.log", false, true},
		{"keep.log", false, false},
		{"x/keep.log", false, false},
		{"sub/debug.log", false, false}, // deeper file re-includes
		{"debug.log", false, true},      // the deeper file does not apply above its folder
		{"sub/local.txt", false, true},
		{"local.txt", false, false},
		{"secret", true, true},
		{"sub/secret", true, true},
	}
	for _, tt := range tests {
		if got := stack.ignored(tt.path, tt.isDir); got != tt.want {
			t.Errorf("%s: ignored = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestGlobSet(t *testing.T) {
	tests := []struct {
		globs string
		path  string
		want  bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "cmd/ava/main.go", true},
		{"*.go", "main.go.txt", false},
		{"**/*.md", "README.md", true},
		{"**/*.md", "docs/a/b.md", true},
		{"cmd/*.go", "cmd/x.go", true},
		{"cmd/*.go", "tool/cmd/x.go", false},
		{"*.{ts,tsx}", "a/b.tsx", true},
		{"*.{ts,tsx}", "a/b.js", false},
		{"*.go, *.md", "x.md", true},
		{"*.go,!*_test.go", "x_test.go", false},
		{"*.go,!*_test.go", "x.go", true},
		{"!*.lock", "yarn.lock", false},
		{"!*.lock", "main.go", true},
		{"src/**", "src/a/b.c", true},
		{"src/**", "lib/a.c", false},
	}
	for _, tt := range tests {
		gs, bad, ok := parseGlobs(tt.globs)
		if !ok {
			t.Fatalf("%q: bad glob %q", tt.globs, bad)
		}
		if got := gs.match(tt.path); got != tt.want {
			t.Errorf("globs %q, path %q: %v, want %v", tt.globs, tt.path, got, tt.want)
		}
	}
	if gs, _, _ := parseGlobs(" , "); gs != nil {
		t.Errorf("an empty glob list should filter nothing")
	}
}

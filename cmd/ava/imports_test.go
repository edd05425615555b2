package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// belowTheCore are the packages under the application core (package
// ava): a surface reaches them only through it (issue 26).
var belowTheCore = []string{"app", "store", "subagent", "session", "orchestrator", "agent", "instance", "cluster",
	"mcpclient", "transcript", "role", "question", "estimate", "observe", "budget"}

// surfaces are the packages that may call only the core, with what each
// may not import besides belowTheCore: the command line stays off the
// event and tool packages too (it has no use for them).
var surfaces = map[string][]string{
	".":                      {"event", "tool"},
	"../../channel/telegram": nil,
	"../../channel/chat":     nil,
	"../../channel/terminal": nil,
	"../../gateway":          nil,
	"../../mcpserver":        nil,
}

// TestSurfacesCallOnlyTheCore keeps the command line, the daemon's API,
// the MCP server and the chat channels thin: every non-test file goes through package ava, never the
// layers under it.
func TestSurfacesCallOnlyTheCore(t *testing.T) {
	for dir, extra := range surfaces {
		bad, checked := forbiddenImports(t, dir, append(slices.Clone(belowTheCore), extra...))
		if checked == 0 {
			t.Fatalf("%s: no source files found", dir)
		}
		for file, pkgs := range bad {
			for _, p := range pkgs {
				t.Errorf("%s imports %s: a surface calls the core (package ava), not the layers under it", filepath.Join(dir, file), p)
			}
		}
	}
}

// TestSurfacesDoNotReachBeneathTheCore keeps the surfaces off
// Runtime.Instance, the core's escape hatch for Ava's own tests.
func TestSurfacesDoNotReachBeneathTheCore(t *testing.T) {
	for dir := range surfaces {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), ".Instance()") {
				t.Errorf("%s calls Runtime.Instance: a surface calls the core's methods only", path)
			}
		}
	}
}

// TestForbiddenImportsFindsOne proves the check: a file importing the
// store is reported, one importing only the core is not.
func TestForbiddenImportsFindsOne(t *testing.T) {
	dir := t.TempDir()
	write := func(name, imp string) {
		src := "package x\n\nimport _ \"github.com/avaagent/ava" + imp + "\"\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("bad.go", "/store/sqlite")
	write("good.go", "")
	write("bad_test.go", "/store")
	bad, checked := forbiddenImports(t, dir, belowTheCore)
	if checked != 2 || len(bad) != 1 || !slices.Equal(bad["bad.go"], []string{"store"}) {
		t.Fatalf("checked %d files, found %v: want bad.go importing store only", checked, bad)
	}
}

// forbiddenImports returns, for each non-test Go file in dir, the
// forbidden packages (or their subpackages) it imports, by the forbidden
// name, and how many files it checked.
func forbiddenImports(t *testing.T, dir string, forbidden []string) (map[string][]string, int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	bad, checked := map[string][]string{}, 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(p, "github.com/avaagent/ava/")
			if !ok {
				continue
			}
			for _, pkg := range forbidden {
				if rest == pkg || strings.HasPrefix(rest, pkg+"/") {
					bad[filepath.Base(path)] = append(bad[filepath.Base(path)], pkg)
				}
			}
		}
	}
	return bad, checked
}

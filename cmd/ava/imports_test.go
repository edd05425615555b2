package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestThinOverSessions keeps the command line thin: it reaches the
// runtime through app, session, the channels and (for files) audit, never
// the layers under them.
func TestThinOverSessions(t *testing.T) {
	forbidden := []string{"agent", "subagent", "orchestrator", "event", "tool", "store", "transcript", "instance"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(path, "github.com/avaagent/ava/")
			if !ok {
				continue
			}
			for _, pkg := range forbidden {
				if rest == pkg || strings.HasPrefix(rest, pkg+"/") {
					t.Errorf("%s imports %s: the command line goes through app and session", name, path)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no command-line source files found")
	}
}

package mcpserver_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden are the packages under the core: the MCP server reaches
// them only through it (package ava).
var forbidden = []string{"app", "store", "subagent", "session", "orchestrator", "agent", "instance", "cluster", "mcpclient"}

// TestImportsOnlyTheCore: mcpserver's code (not its tests) imports none
// of the runtime's internals, so every call goes through ava.Runtime.
func TestImportsOnlyTheCore(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if bad := forbiddenImport(path); bad != "" {
				t.Errorf("%s imports %s: call the core (package ava) instead of %s", f, path, bad)
			}
		}
	}
}

// forbiddenImport is the forbidden package path is or is under, or "".
func forbiddenImport(path string) string {
	rel, ok := strings.CutPrefix(path, "github.com/avaagent/ava/")
	if !ok {
		return ""
	}
	for _, f := range forbidden {
		if rel == f || strings.HasPrefix(rel, f+"/") {
			return f
		}
	}
	return ""
}

package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/tooltest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// writeTree creates files (path → content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// call runs tl with args marshalled to JSON and fails on a Go error.
func call(t *testing.T, ctx context.Context, tl tool.Tool, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(ctx, raw)
	if err != nil {
		t.Fatalf("%s(%s): Go error: %v", tl.Name(), raw, err)
	}
	return res
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFileShowsLineNumbers(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a/b.txt": "alpha\nbeta\r\ngamma"})
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "a/b.txt"})
	want := "     1\talpha\n     2\tbeta\n     3\tgamma\n"
	if res.IsError || res.Output != want {
		t.Fatalf("got %+v, want output %q", res, want)
	}
}

func TestReadFileRanges(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": numbered(1, 10)})
	tools := New(Config{Workspace: dir})
	tests := []struct {
		name    string
		args    map[string]any
		want    string
		isError bool
	}{
		{"middle", map[string]any{"path": "f.txt", "start_line": 3, "end_line": 4},
			"     3\tline 3\n     4\tline 4\n[showing lines 3-4 of 10]", false},
		{"to end", map[string]any{"path": "f.txt", "start_line": 9},
			"     9\tline 9\n    10\tline 10\n[showing lines 9-10 of 10]", false},
		{"end past eof", map[string]any{"path": "f.txt", "start_line": 10, "end_line": 99},
			"    10\tline 10\n[showing lines 10-10 of 10]", false},
		{"start past eof", map[string]any{"path": "f.txt", "start_line": 11},
			"read_file: start_line 11 is past the end of f.txt (10 lines)", true},
		{"end before start", map[string]any{"path": "f.txt", "start_line": 5, "end_line": 4},
			"read_file: end_line 4 is before start_line 5", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, t.Context(), tools.ReadFile(), tt.args)
			if res.Output != tt.want || res.IsError != tt.isError {
				t.Fatalf("got %+v\nwant %q (IsError %v)", res, tt.want, tt.isError)
			}
		})
	}
}

func TestReadFileSchemaRejectsBadArgs(t *testing.T) {
	tools := New(Config{Workspace: t.TempDir()})
	for _, args := range []string{`{}`, `{"path": "x", "start_line": 0}`, `{"path": 3}`, `{"path": "x", "bogus": 1}`} {
		res, err := tools.ReadFile().Run(t.Context(), json.RawMessage(args))
		if err != nil || !res.IsError {
			t.Errorf("args %s: got %+v, %v; want an error result", args, res, err)
		}
	}
}

func TestReadFilePagesLargeFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"big.txt": numbered(1, 9000)})
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "big.txt"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	if !strings.HasSuffix(res.Output, "[showing lines 1-2000 of 9000 (one call shows at most 2000 lines / 50000 bytes); call again with start_line=2001]") {
		t.Fatalf("footer wrong: %q", tail(res.Output))
	}
	if strings.Contains(res.Output, "line 2001\n") || !strings.Contains(res.Output, "  2000\tline 2000\n") {
		t.Fatal("page does not end at line 2000")
	}
	res = call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "big.txt", "start_line": 8001})
	if !strings.HasSuffix(res.Output, "  9000\tline 9000\n[showing lines 8001-9000 of 9000]") {
		t.Fatalf("last page wrong: %q", tail(res.Output))
	}
}

func TestReadFileByteBudget(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("x", 99) + "\n"
	writeTree(t, dir, map[string]string{"wide.txt": strings.Repeat(line, 100)})
	tools := New(Config{Workspace: dir, MaxReadBytes: 1000})
	res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "wide.txt"})
	if len(res.Output) > 1200 {
		t.Fatalf("output %d bytes, budget 1000", len(res.Output))
	}
	if !strings.Contains(res.Output, "[showing lines 1-9 of 100") || !strings.Contains(res.Output, "start_line=10]") {
		t.Fatalf("footer wrong: %q", tail(res.Output))
	}
}

func TestReadFileCutsLongLines(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"min.js": strings.Repeat("é", 5000) + "\nnext\n"})
	tools := New(Config{Workspace: dir, MaxLineLength: 101})
	res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "min.js"})
	first, _, _ := strings.Cut(res.Output, "\n")
	if !strings.HasSuffix(first, " … [line truncated: 10000 bytes]") || len(first) > 160 {
		t.Fatalf("first line: %q", first)
	}
	if !strings.Contains(res.Output, "     2\tnext\n") {
		t.Fatalf("second line missing: %q", res.Output)
	}
}

func TestReadFileRefusesBinary(t *testing.T) {
	dir := t.TempDir()
	latin1 := strings.Repeat("caf\xe9 ", 100) // a fifth of the bytes invalid
	writeTree(t, dir, map[string]string{"nul.bin": "abc\x00def", "latin1.txt": latin1, "mostly.txt": strings.Repeat("plain text ", 100) + "\xe9"})
	tools := New(Config{Workspace: dir})
	for _, name := range []string{"nul.bin", "latin1.txt"} {
		res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": name})
		if !res.IsError || !strings.Contains(res.Output, "binary") {
			t.Errorf("%s: got %+v, want binary refusal", name, res)
		}
	}
	if res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "mostly.txt"}); res.IsError {
		t.Errorf("a text file with one stray byte was refused: %s", res.Output)
	}
}

func TestReadFileConfinedToWorkspace(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "secret"})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"in.txt": "inside", "sub/x.txt": "x"})
	mustSymlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(dir, "leak.txt"))
	mustSymlink(t, outside, filepath.Join(dir, "leakdir"))
	mustSymlink(t, filepath.Join(dir, "in.txt"), filepath.Join(dir, "sub", "ok.txt"))
	tools := New(Config{Workspace: dir})
	refused := []struct{ path, want string }{
		{"../" + filepath.Base(outside) + "/secret.txt", "leads outside the workspace"},
		{"sub/../../x", "leads outside the workspace"},
		{filepath.Join(outside, "secret.txt"), "is outside the workspace"},
		{"leak.txt", "symlink that leads outside"},
		{"leakdir/secret.txt", "symlink that leads outside"},
		{"missing.txt", "does not exist"},
	}
	for _, r := range refused {
		res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": r.path})
		if !res.IsError || !strings.Contains(res.Output, r.want) || strings.Contains(res.Output, "\tsecret") {
			t.Errorf("path %q: got %+v, want refusal containing %q", r.path, res, r.want)
		}
	}
	allowed := map[string]string{
		"sub/ok.txt":                    "inside",
		filepath.Join(dir, "in.txt"):    "inside",
		"./sub/../in.txt":               "inside",
		filepath.Join(dir, "sub/x.txt"): "x",
	}
	for p, want := range allowed {
		res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": p})
		if res.IsError || res.Output != "     1\t"+want+"\n" {
			t.Errorf("path %q: got %+v", p, res)
		}
	}
}

func TestReadFileWorkspaceThroughSymlink(t *testing.T) {
	real := t.TempDir()
	writeTree(t, real, map[string]string{"a.txt": "a"})
	link := filepath.Join(t.TempDir(), "ws")
	mustSymlink(t, real, link)
	tools := New(Config{Workspace: link})
	for _, p := range []string{"a.txt", filepath.Join(link, "a.txt"), filepath.Join(real, "a.txt")} {
		if res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": p}); res.IsError {
			t.Errorf("path %q: %s", p, res.Output)
		}
	}
}

func TestReadFileUsesCallerWorkspace(t *testing.T) {
	cfgDir, callerDir := t.TempDir(), t.TempDir()
	writeTree(t, cfgDir, map[string]string{"who.txt": "config"})
	writeTree(t, callerDir, map[string]string{"who.txt": "caller"})
	tools := New(Config{Workspace: cfgDir})
	ctx := tool.WithCaller(t.Context(), tool.Caller{AgentID: "S-abcdef", Subagent: true, Workspace: callerDir})
	if res := call(t, ctx, tools.ReadFile(), map[string]any{"path": "who.txt"}); res.Output != "     1\tcaller\n" {
		t.Fatalf("got %q, want the caller's workspace", res.Output)
	}
	if res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "who.txt"}); res.Output != "     1\tconfig\n" {
		t.Fatalf("got %q, want the configured workspace", res.Output)
	}
}

func TestReadFileNoWorkspaceIsGoError(t *testing.T) {
	_, err := New(Config{}).ReadFile().Run(t.Context(), json.RawMessage(`{"path":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "no workspace") {
		t.Fatalf("err = %v, want a no-workspace error", err)
	}
}

func TestReadFileDirectoryAndEmpty(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"d/b.txt": "", "d/a/x": "x"})
	tools := New(Config{Workspace: dir})
	res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "d"})
	if res.IsError || !strings.HasSuffix(res.Output, ":\na/\nb.txt\n") {
		t.Fatalf("directory: %+v", res)
	}
	res = call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "d/b.txt"})
	if res.IsError || res.Output != "(d/b.txt is empty)" {
		t.Fatalf("empty file: %+v", res)
	}
}

func TestReadFileCancelled(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"f.txt": "x\n"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := call(t, ctx, New(Config{Workspace: dir}).ReadFile(), map[string]any{"path": "f.txt"})
	if !res.IsError || !strings.Contains(res.Output, "cancelled") {
		t.Fatalf("got %+v", res)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func tail(s string) string {
	if len(s) > 300 {
		return "…" + s[len(s)-300:]
	}
	return s
}

func TestAllRegister(t *testing.T) {
	tooltest.CheckSet(t, New(Config{}).All(), "read_file", "search_and_read", "search_codebase")
}

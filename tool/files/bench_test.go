package files

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchTreeVersion names the cached benchmark tree; bump it when
// generateBenchTree changes.
const benchTreeVersion = "v1"

// benchTree returns a tree of 50,000 small files (50 × 10 × 100), generated once and
// cached under os.TempDir() so repeated runs skip the generation.
func benchTree(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "ava-files-bench-"+benchTreeVersion)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "ava-files-bench-gen-")
	if err != nil {
		b.Fatal(err)
	}
	if err := generateBenchTree(tmp); err != nil {
		os.RemoveAll(tmp)
		b.Fatal(err)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		b.Fatal(err)
	}
	return dir
}

// generateBenchTree writes 50 × 10 folders of 100 Go-like files, about 1 KB
// each; one file in 97 holds "needle" and one line in 13 a Handler func.
func generateBenchTree(dir string) error {
	n := 0
	for a := range 50 {
		for s := range 10 {
			sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", a), fmt.Sprintf("sub%d", s))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
			for f := range 100 {
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), benchFile(n), 0o644); err != nil {
					return err
				}
				n++
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
}

func benchFile(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "package p%d\n\nimport \"fmt\"\n\n", n%50)
	for i := range 8 {
		if (n*8+i)%13 == 0 {
			fmt.Fprintf(&b, "func Serve%dHandler(w int) error {\n", i)
		} else {
			fmt.Fprintf(&b, "func helper%d_%d(x int) int {\n", n, i)
		}
		fmt.Fprintf(&b, "\ty := x * %d // compute the value\n\treturn fmt.Sprint(y)\n}\n\n", i)
	}
	if n%97 == 0 {
		b.WriteString("// needle: remember this line\n")
	}
	return b.Bytes()
}

// BenchmarkSearch compares the search engine with GNU grep -rn on the
// same tree and pattern; both must report the same number of matches.
func BenchmarkSearch(b *testing.B) {
	if _, err := exec.LookPath("grep"); err != nil {
		b.Skip("grep not installed")
	}
	dir := benchTree(b)
	for _, pat := range []struct{ name, expr string }{
		{"literal", "needle"},
		{"regex", `func [A-Z]\w+Handler\(`},
	} {
		want := grepCount(b, dir, pat.expr) // also warms the page cache
		b.Run(pat.name+"/ava", func(b *testing.B) {
			tools := New(Config{Workspace: dir, MaxOutput: 1 << 30})
			for b.Loop() {
				got := avaCount(b, tools, dir, pat.expr)
				if got != want {
					b.Fatalf("ava found %d matches, grep %d", got, want)
				}
			}
		})
		b.Run(pat.name+"/grep", func(b *testing.B) {
			for b.Loop() {
				if got := grepCount(b, dir, pat.expr); got != want {
					b.Fatalf("grep found %d matches, first run %d", got, want)
				}
			}
		})
	}
}

// avaCount runs a full, uncapped search and formats it, as the tool does.
func avaCount(b *testing.B, tools *Tools, dir, expr string) int {
	ws, err := tools.workspaceFor(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	q, res, err := tools.buildQuery(ws, "bench", searchArgs{Pattern: expr, MaxResults: 1 << 30})
	if q == nil {
		b.Fatal(res.Output, err)
	}
	st, err := tools.run(context.Background(), q)
	if err != nil {
		b.Fatal(err)
	}
	if out := tools.formatGrep(q, st); !strings.Contains(out, "matches in") {
		b.Fatalf("unexpected output %q", tail(out))
	}
	return st.matches
}

// grepCount runs grep -rnE (C locale, its fastest) and counts output lines.
func grepCount(b *testing.B, dir, expr string) int {
	cmd := exec.Command("grep", "-rnE", expr, dir)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("grep: %v", err)
	}
	return bytes.Count(out, []byte{'\n'})
}

//go:build unix

package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSearchDirectorySwapRace swaps a folder of the workspace for a
// symlink to a folder outside it, over and over, while read_file and the
// searches run: no call may ever return the outside file's content.
func TestSearchDirectorySwapRace(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"f.txt": "needle OUTSIDE_SECRET\n", "deep/g.txt": "needle OUTSIDE_SECRET\n"})
	ws := t.TempDir()
	files := map[string]string{"top.txt": "needle top\n"}
	for _, n := range []string{"f.txt", "deep/g.txt", "deep/h.txt", "i.txt"} {
		files["a/"+n] = "needle inside\n"
	}
	writeTree(t, ws, files)
	a, away := filepath.Join(ws, "a"), filepath.Join(ws, "a.away")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := os.Rename(a, away); err != nil {
				t.Error(err)
				return
			}
			if err := os.Symlink(outside, a); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(len(away)%3) * time.Microsecond)
			os.Remove(a)
			if err := os.Rename(away, a); err != nil {
				t.Error(err)
				return
			}
		}
	})
	tools := New(Config{Workspace: ws, Workers: 4})
	calls := []struct {
		name string
		run  func(path string) string
	}{
		{"search_codebase", func(p string) string {
			return call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "path": p}).Output
		}},
		{"search_and_read", func(p string) string {
			return call(t, t.Context(), tools.SearchAndRead(), map[string]any{"pattern": "needle", "path": p}).Output
		}},
		{"read_file", func(p string) string {
			if p == "" {
				p = "a/f.txt"
			} else {
				p += "/f.txt"
			}
			return call(t, t.Context(), tools.ReadFile(), map[string]any{"path": p}).Output
		}},
	}
	iterations := 200
	if testing.Short() {
		iterations = 50
	}
	for i := range iterations {
		for _, c := range calls {
			for _, p := range []string{"", "a", "a/deep"} {
				if out := c.run(p); strings.Contains(out, "OUTSIDE_SECRET") {
					close(stop)
					wg.Wait()
					t.Fatalf("iteration %d: %s(path %q) returned a file outside the workspace:\n%s", i, c.name, p, out)
				}
			}
		}
	}
	close(stop)
	wg.Wait()
}

// mkfifo makes a named pipe at p.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// within runs f and fails if it takes longer than d (a hang).
func promptly(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

func TestFIFOsNeverBlock(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"ok.txt": "needle ok\n", ".git/HEAD": "ref"})
	mkfifo(t, filepath.Join(ws, "pipe"))
	mkfifo(t, filepath.Join(ws, "sub", ".gitignore"))
	mkfifo(t, filepath.Join(ws, ".git", "info", "exclude"))
	writeTree(t, ws, map[string]string{"sub/x.txt": "needle sub\n"})
	tools := New(Config{Workspace: ws, Timeout: 5 * time.Second})

	promptly(t, 3*time.Second, "read_file on a FIFO", func() {
		res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "pipe"})
		if !res.IsError || !strings.Contains(res.Output, "named pipe (FIFO), not a regular file or folder; refused") {
			t.Errorf("read_file pipe: %+v", res)
		}
	})
	promptly(t, 3*time.Second, "search_codebase on a FIFO", func() {
		res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "path": "pipe"})
		if !res.IsError || !strings.Contains(res.Output, "named pipe (FIFO)") {
			t.Errorf("search pipe: %+v", res)
		}
	})
	for _, p := range []string{"", "sub"} {
		promptly(t, 3*time.Second, "search_codebase over FIFOs", func() {
			res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "path": p})
			if res.IsError || !strings.Contains(res.Output, "needle sub") {
				t.Errorf("search %q: %+v", p, res)
			}
		})
	}
}

func TestDevZeroSymlinksRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"ok.txt": "needle ok\n", "sub/y.txt": "needle y\n"})
	mustSymlink(t, "/dev/zero", filepath.Join(ws, "zero"))
	mustSymlink(t, "/dev/zero", filepath.Join(ws, ".gitignore"))
	mustSymlink(t, "/dev/zero", filepath.Join(ws, "sub", ".gitignore"))
	tools := New(Config{Workspace: ws, Timeout: 5 * time.Second})
	promptly(t, 3*time.Second, "read_file on /dev/zero", func() {
		res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "zero"})
		if !res.IsError || !strings.Contains(res.Output, "leads outside the workspace") {
			t.Errorf("read_file zero: %+v", res)
		}
	})
	promptly(t, 3*time.Second, "search with /dev/zero .gitignore files", func() {
		for _, p := range []string{"", "sub"} {
			res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "path": p})
			if res.IsError || !strings.Contains(res.Output, "needle y") {
				t.Errorf("search %q: %+v", p, res)
			}
		}
	})
}

func TestSearchNeverFollowsSymlinkOut(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"key.txt": "needle OUTSIDE_SECRET\n"})
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"in.txt": "needle in\n"})
	mustSymlink(t, outside, filepath.Join(ws, "out"))
	mustSymlink(t, filepath.Join(outside, "key.txt"), filepath.Join(ws, "key.txt"))
	tools := New(Config{Workspace: ws})
	for _, p := range []string{"", "out", "key.txt", "out/key.txt"} {
		res := call(t, t.Context(), tools.SearchAndRead(), map[string]any{"pattern": "needle", "path": p})
		if strings.Contains(res.Output, "OUTSIDE_SECRET") {
			t.Fatalf("path %q leaked: %s", p, res.Output)
		}
		if p != "" && (!res.IsError || !strings.Contains(res.Output, "leads outside")) {
			t.Errorf("path %q: want a refusal, got %+v", p, res)
		}
	}
}

// TestDataRootRefused: the data root is never read, whether it lies in
// the workspace, a symlink leads to it, or the workspace lies in it.
func TestDataRootRefused(t *testing.T) {
	ws := t.TempDir()
	data := filepath.Join(ws, "ava-data")
	writeTree(t, ws, map[string]string{"in.txt": "needle in\n", "ava-data/agents/web_crawler.md": "needle ROLE\n"})
	outsideData := t.TempDir()
	writeTree(t, outsideData, map[string]string{"agents/r.md": "needle ROLE2\n"})
	mustSymlink(t, data, filepath.Join(ws, "dl"))
	tools := New(Config{Workspace: ws, Deny: []string{data, outsideData}})
	res := call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "ava-data/agents/web_crawler.md"})
	if !res.IsError || !strings.Contains(res.Output, "data root") {
		t.Errorf("read_file in the data root: %+v", res)
	}
	res = call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "ava-data"})
	if !res.IsError || !strings.Contains(res.Output, "data root") {
		t.Errorf("read_file of the data root: %+v", res)
	}
	for _, p := range []string{"", "ava-data", "dl", "dl/agents"} {
		res := call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "path": p})
		if strings.Contains(res.Output, "ROLE") {
			t.Fatalf("search %q read the data root: %s", p, res.Output)
		}
	}
	inside := New(Config{Workspace: filepath.Join(outsideData, "agents"), Deny: []string{outsideData}})
	res = call(t, t.Context(), inside.SearchCodebase(), map[string]any{"pattern": "needle"})
	if !res.IsError || !strings.Contains(res.Output, "data root") {
		t.Errorf("workspace in the data root: %+v", res)
	}
}

// openFDs counts this process's open descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// TestNoDescriptorLeaks: searches that finish, hit the cap, are refused
// or time out close every folder and file they opened.
func TestNoDescriptorLeaks(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d%d/e%d/f%d.txt", i%7, i%5, i)] = "needle\nneedle\n"
	}
	writeTree(t, ws, files)
	tools := New(Config{Workspace: ws, Workers: 3})
	before := openFDs(t)
	for range 20 {
		call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle"})
		call(t, t.Context(), tools.SearchCodebase(), map[string]any{"pattern": "needle", "max_results": 3})
		call(t, t.Context(), tools.SearchAndRead(), map[string]any{"pattern": "needle", "path": "d1"})
		call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "d2/e2"})
		call(t, t.Context(), tools.ReadFile(), map[string]any{"path": "d0/e0/f0.txt"})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		call(t, ctx, tools.SearchCodebase(), map[string]any{"pattern": "needle"})
	}
	if after := openFDs(t); after > before {
		t.Fatalf("%d descriptors open before, %d after", before, after)
	}
}

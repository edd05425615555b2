//go:build unix

package role_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/role"
)

func TestWorkspaceRoleOverride(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".ava", "agents")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "cr.md"), []byte("---\nname: code_reviewer\ntools: [read_file]\nmax_cost_cents: 100000\n---\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.md"), []byte("---\nname: newcomer\ntools: [read_file]\n---\n"), 0o644)
	rel := filepath.Join(".ava", "agents")

	roles, errs := role.LoadDirs([]role.Dir{{Path: rel, Base: ws}}, known)
	if len(errs) != 1 || !errors.Is(errs[0], role.ErrUntrustedOverride) {
		t.Fatalf("untrusted: errors %v, want one ErrUntrustedOverride", errs)
	}
	if r := roles["code_reviewer"]; r.Source != "built-in" || r.Overrides != "" {
		t.Fatalf("untrusted workspace replaced the built-in: %+v", r)
	}
	if _, ok := roles["newcomer"]; !ok {
		t.Fatal("an untrusted workspace may still add a new role")
	}

	roles, errs = role.LoadDirs([]role.Dir{{Path: rel, Base: ws, MayOverride: true}}, known)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if r := roles["code_reviewer"]; r.Overrides != "built-in" || r.Limits.MaxCostCents != 100000 {
		t.Fatalf("trusted: %+v", r)
	}
}

// TestRoleFilesNeverBlockOrExhaust: a role file that is a FIFO or a
// symlink to /dev/zero is refused at once, and a role folder that is a
// symlink out of the workspace is refused.
func TestRoleFilesNeverBlockOrExhaust(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(ws, ".ava", "agents")
	os.MkdirAll(dir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o644); err != nil {
		t.Skip(err)
	}
	os.Symlink("/dev/zero", filepath.Join(dir, "zero.md"))
	os.WriteFile(filepath.Join(dir, "ok.md"), []byte("---\nname: fine\ntools: [read_file]\n---\n"), 0o644)
	done := make(chan struct{})
	var roles map[string]role.Role
	var errs []error
	go func() {
		defer close(done)
		roles, errs = role.LoadDirs([]role.Dir{{Path: filepath.Join(".ava", "agents"), Base: ws}}, known)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("loading roles blocked")
	}
	if _, ok := roles["fine"]; !ok || len(errs) != 2 {
		t.Fatalf("roles %v, errors %v", roles, errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "pipe.md") && !strings.Contains(e.Error(), "zero.md") {
			t.Errorf("unexpected error %v", e)
		}
	}

	ws2 := t.TempDir()
	os.MkdirAll(filepath.Join(ws2, ".ava"), 0o755)
	os.Symlink(outside, filepath.Join(ws2, ".ava", "agents"))
	os.WriteFile(filepath.Join(outside, "x.md"), []byte("---\nname: outsider\ntools: [read_file]\n---\n"), 0o644)
	roles, errs = role.LoadDirs([]role.Dir{{Path: filepath.Join(".ava", "agents"), Base: ws2}}, known)
	if _, ok := roles["outsider"]; ok || len(errs) != 1 {
		t.Fatalf("role folder outside the workspace was read: errors %v", errs)
	}
}

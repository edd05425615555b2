package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSetTrustedKeepsOtherSettings(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	file := filepath.Join(root, FileName)
	if err := os.WriteFile(file, []byte("# mine\nmodel: anthropic/sonnet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, changed, err := SetTrusted(root, ws, true, nil)
	if err != nil || !changed {
		t.Fatalf("trust: %v changed=%v", err, changed)
	}
	if _, changed, _ := SetTrusted(root, ws, true, nil); changed {
		t.Error("trusting twice changed the file")
	}
	env := func(k string) string {
		if k == "AVA_DATA_ROOT" {
			return root
		}
		return ""
	}
	cfg, err := Load(env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "anthropic/sonnet" || !cfg.WorkspaceTrusted(ws) || cfg.WorkspaceTrusted(t.TempDir()) {
		t.Fatalf("model %q, trusted %v (list %v, canonical %s)", cfg.Model, cfg.WorkspaceTrusted(ws), cfg.TrustedWorkspaces, got)
	}
	if _, changed, err := SetTrusted(root, ws, false, nil); err != nil || !changed {
		t.Fatalf("untrust: %v changed=%v", err, changed)
	}
	cfg, _ = Load(env)
	if cfg.WorkspaceTrusted(ws) {
		t.Fatal("still trusted after --remove")
	}
}

func TestTrustedWorkspacesFromEnvironment(t *testing.T) {
	root, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	cfg, err := Load(func(k string) string {
		switch k {
		case "AVA_DATA_ROOT":
			return root
		case "AVA_TRUSTED_WORKSPACES":
			return a + string(os.PathListSeparator) + b
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.WorkspaceTrusted(a) || !cfg.WorkspaceTrusted(b) || cfg.WorkspaceTrusted(filepath.Join(a, "sub")) {
		t.Fatalf("trusted %v", cfg.TrustedWorkspaces)
	}
}

func TestConfigFileMustBeRegular(t *testing.T) {
	root := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(root, FileName)); err != nil {
		t.Skip(err)
	}
	_, err := Load(func(k string) string {
		if k == "AVA_DATA_ROOT" {
			return root
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a config.yaml symlinked to /dev/zero: %v", err)
	}
}

// TestTrustRecordsContents: ava trust records each file's hash beside the
// workspace, re-trusting replaces them, and an entry of the old format (a
// bare path) still reads, as trusted with nothing recorded.
func TestTrustRecordsContents(t *testing.T) {
	root, ws, old := t.TempDir(), t.TempDir(), t.TempDir()
	file := filepath.Join(root, FileName)
	if err := os.WriteFile(file, []byte("trusted_workspaces:\n  - "+old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "AVA_DATA_ROOT" {
			return root
		}
		return ""
	}
	first := map[string]string{".ava/agents/a.md": "sha256:aa", ".ava/agents/b.md": "sha256:bb"}
	if _, changed, err := SetTrusted(root, ws, true, first); err != nil || !changed {
		t.Fatalf("trust: %v changed=%v", err, changed)
	}
	cfg, err := Load(env)
	if err != nil {
		t.Fatal(err)
	}
	legacy, ok := cfg.WorkspaceTrust(old)
	if !ok || legacy.Recorded || len(legacy.Files) != 0 {
		t.Fatalf("old entry: %+v, %v", legacy, ok)
	}
	got, ok := cfg.WorkspaceTrust(ws)
	if !ok || !got.Recorded || got.Files[".ava/agents/a.md"] != "sha256:aa" {
		t.Fatalf("new entry: %+v, %v", got, ok)
	}
	now := map[string]string{".ava/agents/a.md": "sha256:a2", ".ava/agents/c.md": "sha256:cc"}
	want := []FileChange{{".ava/agents/a.md", "changed"}, {".ava/agents/b.md", "removed"}, {".ava/agents/c.md", "new"}}
	if diff := got.Changes(now); !slices.Equal(diff, want) {
		t.Fatalf("changes %v, want %v", diff, want)
	}
	if diff := legacy.Changes(now); len(diff) != 2 || diff[0].Kind != "new" {
		t.Fatalf("old entry's changes %v, want every file new", diff)
	}
	if _, changed, err := SetTrusted(root, ws, true, now); err != nil || !changed {
		t.Fatalf("re-trust: %v changed=%v", err, changed)
	}
	if _, changed, _ := SetTrusted(root, ws, true, now); changed {
		t.Fatal("trusting the same contents twice changed the file")
	}
	cfg, _ = Load(env)
	if got, _ := cfg.WorkspaceTrust(ws); len(got.Changes(now)) != 0 || len(cfg.TrustedWorkspaces) != 2 {
		t.Fatalf("after re-trust: %+v (list %+v)", got, cfg.TrustedWorkspaces)
	}
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetTrustedKeepsOtherSettings(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	file := filepath.Join(root, FileName)
	if err := os.WriteFile(file, []byte("# mine\nmodel: anthropic/sonnet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, changed, err := SetTrusted(root, ws, true)
	if err != nil || !changed {
		t.Fatalf("trust: %v changed=%v", err, changed)
	}
	if _, changed, _ := SetTrusted(root, ws, true); changed {
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
	if _, changed, err := SetTrusted(root, ws, false); err != nil || !changed {
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

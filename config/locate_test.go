package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/config"
)

// TestLocateNamesTheLine: a setting Validate refuses is shown with its
// line in config.yaml, also an item of a list (hooks[1]).
func TestLocateNamesTheLine(t *testing.T) {
	root := t.TempDir()
	body := "model: scripted/x\nconfirm: sometimes\nhooks:\n  - events: [subagent:start]\n    command: [/bin/true]\n  - events: [nonsense]\n    command: [/bin/true]\n"
	if err := os.WriteFile(filepath.Join(root, config.FileName), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(func(k string) string {
		if k == "AVA_DATA_ROOT" {
			return root
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	err = config.Locate(cfg.Source, cfg.Validate())
	if err == nil {
		t.Fatal("Validate accepted confirm: sometimes")
	}
	for _, want := range []string{"confirm (line 2 of " + cfg.Source + ")", "hooks[1] (line 6 of " + cfg.Source + ")"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestChangesMarkReloadable: Changes lists what differs, each marked as
// the settings table says.
func TestChangesMarkReloadable(t *testing.T) {
	a, b := config.Default(), config.Default()
	b.Addr, b.Confirm = "127.0.0.1:9999", "never"
	got := config.Changes(a, b)
	want := map[string]bool{"addr": false, "confirm": true}
	if len(got) != len(want) {
		t.Fatalf("Changes = %v, want addr and confirm", got)
	}
	for _, c := range got {
		if r, ok := want[c.Key]; !ok || r != c.Reload {
			t.Errorf("change %+v: want reload=%v", c, r)
		}
	}
	if s := got[0].String(); s != "changed `addr` needs a restart" {
		t.Errorf("String = %q", s)
	}
}

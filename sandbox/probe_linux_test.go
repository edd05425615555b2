package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestProbeReady(t *testing.T) {
	st := Probe()
	t.Log(st.Summary())
	if !st.Ready {
		t.Fatalf("sandbox not ready here: %s", st.Summary())
	}
}

// runIn runs argv in a sandbox over a fresh workspace and scratch folder.
func runIn(t *testing.T, spec Spec) (Exit, string) {
	t.Helper()
	if spec.Workspace == "" {
		spec.Workspace = t.TempDir()
	}
	if spec.Scratch == "" {
		spec.Scratch = t.TempDir()
	}
	if spec.Dir == "" {
		spec.Dir = spec.Workspace
	}
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + spec.Scratch, "TMPDIR=" + spec.Scratch}
	}
	c, err := Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	ex, err := c.Exit()
	if err != nil {
		t.Fatalf("exit: %v (output %q)", err, out.String())
	}
	return ex, out.String()
}

func TestRunEcho(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello"), 0o644)
	ex, out := runIn(t, Spec{Workspace: ws, Argv: []string{"bash", "-c", "cat a.txt; echo; id -u; echo $$; ls /proc | grep -c '^[0-9]'; touch b.txt && echo wrote"}})
	t.Logf("exit %+v output:\n%s", ex, out)
	if ex.Code != 0 {
		t.Fatal("failed")
	}
}

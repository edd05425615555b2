package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRolesOnReadOnlyDataRoot runs `ava roles` and `ava roles --stats`
// as an unprivileged user (nobody, when the test runs as root) on a data
// root it may not write: one holding a store (the root 0555, ava.db
// 0444) and a missing one in a parent it may not write. Both must list
// the roles and exit 0, and create or change nothing: the tree's listing,
// modes, times and bytes, and the root's own mtime, stay as they were.
func TestRolesOnReadOnlyDataRoot(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(base, "good")
	if _, stderr, code := ava(t, map[string]string{"AVA_DATA_ROOT": good}, "run", "--offline", "--yes", "hi"); code != 0 {
		t.Fatalf("making a store: exit %d: %s", code, stderr)
	}
	bin := copyBinary(t, base)
	cases := []struct {
		name string
		root func(dir string) string
		// runs is the researcher's RUNS column under --stats.
		runs string
	}{
		{"data root with a store", func(dir string) string {
			r := filepath.Join(dir, "root")
			if out, err := exec.Command("cp", "-a", good, r).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			chmod(t, filepath.Join(r, "ava.db"), 0o444)
			chmod(t, r, 0o555)
			return r
		}, "1"},
		{"missing data root", func(dir string) string {
			chmod(t, dir, 0o555)
			return filepath.Join(dir, "ava")
		}, "0"},
	}
	for _, c := range cases {
		for _, args := range [][]string{{"roles"}, {"roles", "--stats"}} {
			t.Run(c.name+"/"+strings.Join(args, "_"), func(t *testing.T) {
				dir := filepath.Join(base, strings.NewReplacer(" ", "_", "/", "_").Replace(t.Name()))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				root := c.root(dir)
				t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(root, 0o755) })
				before, beforeTime := snapshot(t, root)
				stdout, stderr, code := runAsOther(t, bin, base, root, args...)
				if code != 0 {
					t.Fatalf("exit %d:\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				if !strings.Contains(stdout, "researcher") {
					t.Errorf("stdout lacks the built-in role researcher:\n%s", stdout)
				}
				if stats := regexp.MustCompile(`(?m)^researcher +` + c.runs + ` `); len(args) > 1 && !stats.MatchString(stdout) {
					t.Errorf("stdout lacks %q (the store's figures):\n%s", stats, stdout)
				}
				after, afterTime := snapshot(t, root)
				if beforeTime != afterTime {
					t.Errorf("data root's mtime changed: %v → %v", beforeTime, afterTime)
				}
				for p, b := range before {
					if after[p] != b {
						t.Errorf("%s changed:\nbefore %s\nafter  %s", p, b, after[p])
					}
				}
				for p := range after {
					if _, ok := before[p]; !ok {
						t.Errorf("%s was created", p)
					}
				}
			})
		}
	}
}

// copyBinary copies the test's ava binary into dir, where the other
// user can run it.
func copyBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "ava")
	data, err := os.ReadFile(avaBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// chmod sets p's mode or fails the test.
func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// snapshot is root's tree (nil when root is missing) and root's mtime.
func snapshot(t *testing.T, root string) (map[string]string, time.Time) {
	t.Helper()
	st, err := os.Stat(root)
	if os.IsNotExist(err) {
		return nil, time.Time{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return tree(t, root), st.ModTime()
}

// runAsOther runs bin with args on the data root root as user nobody
// when the test runs as root (the modes above then keep it out), else as
// the test's user, and returns its output and exit code.
func runAsOther(t *testing.T, bin, base, root string, args ...string) (string, string, int) {
	t.Helper()
	home := filepath.Join(base, "home")
	os.MkdirAll(home, 0o777)
	os.Chmod(home, 0o777)
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AVA_DATA_ROOT=" + root, "AVA_WORKSPACE=" + home}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return o.String(), e.String(), code
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mainWith runs Main in process with the environment env.
func mainWith(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := NewApp(strings.NewReader(""), &out, &errb, func(k string) string {
		if v, ok := env[k]; ok || k != "AVA_CONFIRM" {
			return v
		}
		return "never" // spawns start at once unless a test sets AVA_CONFIRM
	})
	code = Main(context.Background(), args, app)
	return out.String(), errb.String(), code
}

// TestDataRootOpenErrorIsExit1OneLine: Main turns an error from opening
// the data root (here a corrupt ava.db) into exit 1 and one line, with no
// usage hint.
func TestDataRootOpenErrorIsExit1OneLine(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, "ava.db")
	if err := os.WriteFile(db, bytes.Repeat([]byte("junk "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := mainWith(t, map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": t.TempDir(), "HOME": t.TempDir()}, "roles")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "ava: open store " + db + ": the file is not a valid SQLite database"
	if !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr is not one line starting %q:\n%s", want, stderr)
	}
}

// TestDataRootOSErrorIsNotAUsageError: an error met while a command runs
// is a failure (exit 1), even when its text contains words of cobra's
// usage errors. A NUL byte in the data root makes the system answer
// "invalid argument", which used to be taken for a usage error (exit 2,
// "Run 'ava --help'").
func TestDataRootOSErrorIsNotAUsageError(t *testing.T) {
	root := filepath.Join(t.TempDir(), "bad\x00name")
	_, stderr, code := mainWith(t, map[string]string{"AVA_DATA_ROOT": root, "HOME": t.TempDir()}, "roles")
	if code != 1 || !strings.Contains(stderr, "invalid argument") || strings.Contains(stderr, "--help") {
		t.Errorf("exit %d, want 1 with the error and no usage hint:\n%s", code, stderr)
	}
	// Real usage errors keep exit 2.
	if _, stderr, code := mainWith(t, nil, "roles", "extra"); code != 2 || !strings.Contains(stderr, "--help") {
		t.Errorf("usage error: exit %d:\n%s", code, stderr)
	}
}

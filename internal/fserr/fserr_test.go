package fserr

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWrapExplainsWhatTheSystemErrorLeavesOut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "logs")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A real ENOTDIR: a directory wanted under a regular file.
	under := filepath.Join(file, "ava")
	mkErr := os.MkdirAll(under, 0o700)
	if !errors.Is(mkErr, syscall.ENOTDIR) {
		t.Fatalf("MkdirAll under a file: %v", mkErr)
	}
	cases := []struct {
		name string
		path string
		err  error
		want string
	}{
		{"full disk", filepath.Join(dir, "ava.db"), &fs.PathError{Op: "write", Path: filepath.Join(dir, "ava.db"), Err: syscall.ENOSPC},
			"create store " + filepath.Join(dir, "ava.db") + ": the disk is full: write " + filepath.Join(dir, "ava.db") + ": no space left on device"},
		{"quota", dir, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.EDQUOT}, "create store " + dir + ": the disk quota is used up: mkdir"},
		{"read-only", dir, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.EROFS}, "create store " + dir + ": the file system is read-only: mkdir"},
		{"parent is a file", under, mkErr, "create store " + under + ": " + file + " is a file, not a directory: mkdir " + file + ": not a directory"},
		{"path is a file", file, os.MkdirAll(file, 0o700), "create store " + file + ": " + file + " is a file, not a directory: mkdir"},
		{"permission", dir, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.EACCES}, "create store " + dir + ": mkdir " + dir + ": permission denied"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Wrap("create store", c.path, c.err)
			if !strings.HasPrefix(got.Error(), c.want) {
				t.Errorf("got  %q\nwant %q…", got, c.want)
			}
			if !errors.Is(got, c.err) {
				t.Errorf("%v does not wrap %v", got, c.err)
			}
		})
	}
	if Wrap("x", dir, nil) != nil {
		t.Error("Wrap of nil is not nil")
	}
}

func TestFileInPath(t *testing.T) {
	dir := t.TempDir()
	if got := FileInPath(filepath.Join(dir, "a", "b")); got != "" {
		t.Errorf("no file in path, got %q", got)
	}
	file := filepath.Join(dir, "a")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(file, "b"), filepath.Join(file, "b", "c")} {
		if got := FileInPath(p); got != file {
			t.Errorf("FileInPath(%s) = %q, want %q", p, got, file)
		}
	}
}

func TestNoSpaceLeftOnAnOrdinaryDirectory(t *testing.T) {
	// The test's temporary directory has room: a false "full" here would
	// turn every I/O error into a wrong diagnosis.
	dir := t.TempDir()
	if NoSpaceLeft(dir) || NoSpaceLeft(filepath.Join(dir, "missing", "file")) {
		t.Error("NoSpaceLeft on a file system with room")
	}
}

package main_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDataRootUnusableFailsCleanly runs the real command on data roots it
// cannot use. Each used to crash with a nil-pointer panic (exit 2) that
// hid the cause. Now each must exit 1 with one line on stderr naming the
// path and the cause, and leave every file that was there as it was.
func TestDataRootUnusableFailsCleanly(t *testing.T) {
	type dataRoot struct {
		root string // AVA_DATA_ROOT
		keep string // what must stay as it is (a file or a directory tree)
	}
	cases := []struct {
		name string
		// setup prepares the data root under dir.
		setup func(t *testing.T, dir string) dataRoot
		// want are substrings of the error line; {root} is replaced.
		want []string
		// nothingNew: not even a new file may appear in keep.
		nothingNew bool
		skipAsRoot bool
	}{
		{
			name: "corrupt ava.db",
			setup: func(t *testing.T, dir string) dataRoot {
				root := mkdir(t, dir, "root")
				writeOld(t, filepath.Join(root, "ava.db"), bytes.Repeat([]byte("not a database\n"), 300))
				writeOld(t, filepath.Join(root, "config.yaml"), []byte("max_concurrent_subagents: 2\n"))
				return dataRoot{root, root}
			},
			want:       []string{"open store {root}/ava.db: ", "not a valid SQLite database", "left as it is"},
			nothingNew: true,
		},
		{
			name: "ava.db on a full disk",
			setup: func(t *testing.T, dir string) dataRoot {
				if _, err := os.Stat("/dev/full"); err != nil {
					t.Skip("no /dev/full:", err)
				}
				root := mkdir(t, dir, "root")
				if err := os.Symlink("/dev/full", filepath.Join(root, "ava.db")); err != nil {
					t.Fatal(err)
				}
				return dataRoot{root, root}
			},
			want:       []string{"open store {root}/ava.db: ", "the disk is full"},
			nothingNew: true,
		},
		{
			name: "logs is a file",
			setup: func(t *testing.T, dir string) dataRoot {
				root := mkdir(t, dir, "root")
				writeOld(t, filepath.Join(root, "logs"), []byte("my notes, not a directory\n"))
				return dataRoot{root, filepath.Join(root, "logs")}
			},
			want: []string{"create audit log directory {root}/logs/ava: {root}/logs is a file, not a directory"},
		},
		{
			name: "sessions is a file",
			setup: func(t *testing.T, dir string) dataRoot {
				root := mkdir(t, dir, "root")
				writeOld(t, filepath.Join(root, "sessions"), []byte("x\n"))
				return dataRoot{root, filepath.Join(root, "sessions")}
			},
			want: []string{"create session log directory {root}/sessions: {root}/sessions is a file, not a directory"},
		},
		{
			name: "data root is a file",
			setup: func(t *testing.T, dir string) dataRoot {
				root := filepath.Join(dir, "root")
				writeOld(t, root, []byte("a file\n"))
				return dataRoot{root, root}
			},
			want: []string{"data root {root}: {root} is a file, not a directory"},
		},
		{
			name: "data root under a file",
			setup: func(t *testing.T, dir string) dataRoot {
				file := filepath.Join(dir, "file")
				writeOld(t, file, []byte("a file\n"))
				return dataRoot{filepath.Join(file, "ava"), file}
			},
			want: []string{"data root {root}: ", "file is a file, not a directory"},
		},
		{
			name: "data root not writable",
			setup: func(t *testing.T, dir string) dataRoot {
				root := mkdir(t, dir, "root")
				if err := os.Chmod(root, 0o500); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(root, 0o700) })
				return dataRoot{root, root}
			},
			want:       []string{"{root}/ava.db", "permission denied"},
			nothingNew: true,
			skipAsRoot: true,
		},
	}
	for _, c := range cases {
		for _, args := range [][]string{{"roles"}, {"run", "--offline", "hi"}} {
			t.Run(c.name+"/"+args[0], func(t *testing.T) {
				if c.skipAsRoot && os.Geteuid() == 0 {
					t.Skip("permission bits do not stop root")
				}
				dr := c.setup(t, t.TempDir())
				before := tree(t, dr.keep)
				stdout, stderr, code := ava(t, map[string]string{"AVA_DATA_ROOT": dr.root}, args...)
				if strings.Contains(stdout+stderr, "panic") || strings.Contains(stderr, "goroutine ") {
					t.Fatalf("panicked:\n%s", stderr)
				}
				if code != 1 {
					t.Errorf("exit %d, want 1", code)
				}
				line := strings.TrimSuffix(stderr, "\n")
				if strings.Contains(line, "\n") || !strings.HasPrefix(line, "ava: ") {
					t.Errorf("stderr is not one 'ava: ' line:\n%s", stderr)
				}
				for _, w := range c.want {
					if w = strings.ReplaceAll(w, "{root}", dr.root); !strings.Contains(line, w) {
						t.Errorf("stderr lacks %q:\n%s", w, stderr)
					}
				}
				if stdout != "" {
					t.Errorf("stdout: %q", stdout)
				}
				after := tree(t, dr.keep)
				for p, b := range before {
					if a := after[p]; a != b {
						t.Errorf("%s changed:\nbefore %s\nafter  %s", p, b, a)
					}
				}
				if c.nothingNew {
					for p := range after {
						if _, ok := before[p]; !ok {
							t.Errorf("%s was created", p)
						}
					}
				}
			})
		}
	}
}

func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeOld writes a file dated an hour ago, so a write by the command
// would show in its modification time.
func writeOld(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// tree describes every file under root (root itself when it is a file):
// mode, modification time and content hash of files, target of symlinks.
// Directories are listed by name only: their times change when a new
// entry is made, which nothingNew checks separately.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[p] = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[p] = "symlink to " + target
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = fmt.Sprintf("%v %s %x", info.Mode(), info.ModTime().Format(time.RFC3339Nano), sha256.Sum256(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package main_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
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
		// rolesReads: ava roles, which only reads, is not tried (it
		// writes no ava.db, logs or sessions).
		rolesReads bool
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
			rolesReads: true,
		},
		{
			name: "logs is a file",
			setup: func(t *testing.T, dir string) dataRoot {
				root := mkdir(t, dir, "root")
				writeOld(t, filepath.Join(root, "logs"), []byte("my notes, not a directory\n"))
				return dataRoot{root, filepath.Join(root, "logs")}
			},
			want:       []string{"create audit log directory {root}/logs/ava: {root}/logs is a file, not a directory"},
			rolesReads: true,
		},
		{
			name: "sessions is a file",
			setup: func(t *testing.T, dir string) dataRoot {
				root := mkdir(t, dir, "root")
				writeOld(t, filepath.Join(root, "sessions"), []byte("x\n"))
				return dataRoot{root, filepath.Join(root, "sessions")}
			},
			want:       []string{"create session log directory {root}/sessions: {root}/sessions is a file, not a directory"},
			rolesReads: true,
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
	}
	for _, c := range cases {
		for _, args := range [][]string{{"roles"}, {"run", "--offline", "hi"}} {
			if args[0] == "roles" && c.rolesReads {
				continue // it writes nothing there: TestRolesOnReadOnlyDataRoot
			}
			t.Run(c.name+"/"+args[0], func(t *testing.T) {
				dr := c.setup(t, t.TempDir())
				before := tree(t, dr.keep)
				stdout, stderr, code := ava(t, map[string]string{"AVA_DATA_ROOT": dr.root}, args...)
				if strings.Contains(stdout+stderr, "panic") || strings.Contains(stderr, "goroutine ") {
					t.Fatalf("panicked:\n%s", stderr)
				}
				if code != 1 {
					t.Errorf("exit %d, want 1", code)
				}
				line := errorLine(stderr)
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

// avaInMountNS runs the binary as ava does, but in a private mount
// namespace after the shell commands in prepare (which may mount a
// read-only bind or a small tmpfs, and use $AVA_DATA_ROOT), and then runs
// check, whose failure (exit 98) the test reports. It skips when no such
// namespace can be made (not root, no CAP_SYS_ADMIN, no unshare).
func avaInMountNS(t *testing.T, root, prepare, check string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if out, err := exec.Command("unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt").CombinedOutput(); err != nil {
		t.Skipf("cannot mount in a private mount namespace (needs root with CAP_SYS_ADMIN): %v %s", err, out)
	}
	script := "set -e\n" + prepare + "\nset +e\n\"$0\" \"$@\"\nrc=$?\n" + check + "\nexit $rc\n"
	cmd := exec.Command("unshare", append([]string{"-m", "sh", "-c", script, avaBin}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + root, "AVA_WORKSPACE=" + t.TempDir()}
	stdout, stderr, code = runCmd(t, cmd)
	if code == 98 {
		t.Fatalf("check failed:\n%s", stderr)
	}
	return stdout, stderr, code
}

// TestDataRootReadOnlyOrFullDisk covers the cases that need a real
// read-only mount or a real full disk: a read-only bind of the data root
// (empty, or holding a store), and a data root on a full tmpfs (fresh, or
// holding a store). Each must exit 1 with one line naming ava.db and the
// cause, and leave the files that were there as they were.
func TestDataRootReadOnlyOrFullDisk(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	if _, stderr, code := ava(t, map[string]string{"AVA_DATA_ROOT": good}, "run", "--offline", "hi"); code != 0 {
		t.Fatalf("making a store: exit %d: %s", code, stderr)
	}
	// same fails (exit 98) unless every file of good is in $AVA_DATA_ROOT
	// with the same bytes and modification time, but for the integrity
	// marker, which a clean close rewrites in place to record the copy's
	// own identity (its inode is another) so that the next open need not
	// check the file again, and SQLite's working files: the -shm file,
	// rebuilt by every open, and the -wal file, which must be left empty.
	same := `for f in $(cd ` + good + ` && find . -type f ! -name ava.db-checked ! -name ava.db-shm ! -name ava.db-wal); do
  cmp -s "` + good + `/$f" "$AVA_DATA_ROOT/$f" || { echo "changed: $f" >&2; exit 98; }
  [ "$(stat -c %Y "` + good + `/$f")" = "$(stat -c %Y "$AVA_DATA_ROOT/$f")" ] || { echo "mtime changed: $f" >&2; exit 98; }
done
[ ! -s "$AVA_DATA_ROOT/ava.db-wal" ] || { echo "ava.db-wal left with $(stat -c %s "$AVA_DATA_ROOT/ava.db-wal") bytes" >&2; exit 98; }`
	cases := []struct {
		name           string
		root           func(dir string) string
		prepare, check string
		want           []string
	}{
		{
			name:    "read-only empty data root",
			root:    func(dir string) string { return mkdir(t, dir, "root") },
			prepare: `mount --bind -o ro "$AVA_DATA_ROOT" "$AVA_DATA_ROOT"`,
			check:   `[ -z "$(ls -A "$AVA_DATA_ROOT")" ] || { echo "created: $(ls -A "$AVA_DATA_ROOT")" >&2; exit 98; }`,
			want:    []string{"open store {root}/ava.db: ", "the file system is read-only"},
		},
		{
			name: "read-only data root with a store",
			root: func(dir string) string {
				root := filepath.Join(dir, "root")
				if out, err := exec.Command("cp", "-a", good, root).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v %s", err, out)
				}
				return root
			},
			prepare: `mount --bind -o ro "$AVA_DATA_ROOT" "$AVA_DATA_ROOT"`,
			check:   same,
			want:    []string{"open store {root}/ava.db: ", "the file system is read-only"},
		},
		{
			name: "fresh data root on a full disk",
			root: func(dir string) string { return filepath.Join(mkdir(t, dir, "disk"), "ava") },
			prepare: `mount -t tmpfs -o size=64k tmpfs "$(dirname "$AVA_DATA_ROOT")"
dd if=/dev/zero of="$(dirname "$AVA_DATA_ROOT")/fill" bs=4k count=64 2>/dev/null || true`,
			want: []string{"open store {root}/ava.db: ", "the disk is full"},
		},
		{
			name: "data root with a store on a full disk",
			root: func(dir string) string { return filepath.Join(mkdir(t, dir, "disk"), "ava") },
			prepare: `mount -t tmpfs -o size=1m tmpfs "$(dirname "$AVA_DATA_ROOT")"
cp -a ` + good + ` "$AVA_DATA_ROOT"
dd if=/dev/zero of="$(dirname "$AVA_DATA_ROOT")/fill" bs=4k count=256 2>/dev/null || true`,
			check: same,
			// The store opens (its files are all there); its first
			// write, the instance's registration, finds the disk full.
			want: []string{"store {root}/ava.db: ", "the disk is full"},
		},
	}
	for _, c := range cases {
		// ava roles reads a read-only data root: TestRolesOnReadOnlyDataRoot.
		for _, args := range [][]string{{"run", "--offline", "hi"}} {
			t.Run(c.name+"/"+args[0], func(t *testing.T) {
				root := c.root(t.TempDir())
				stdout, stderr, code := avaInMountNS(t, root, c.prepare, c.check, args...)
				if strings.Contains(stdout+stderr, "panic") || strings.Contains(stderr, "goroutine ") {
					t.Fatalf("panicked:\n%s", stderr)
				}
				if code != 1 {
					t.Errorf("exit %d, want 1", code)
				}
				line := errorLine(stderr)
				if strings.Contains(line, "\n") || !strings.HasPrefix(line, "ava: ") {
					t.Errorf("stderr is not one 'ava: ' line:\n%s", stderr)
				}
				for _, w := range c.want {
					if w = strings.ReplaceAll(w, "{root}", root); !strings.Contains(line, w) {
						t.Errorf("stderr lacks %q:\n%s", w, stderr)
					}
				}
				if stdout != "" {
					t.Errorf("stdout: %q", stdout)
				}
			})
		}
	}
}

// TestDataRootPermissionDenied runs the command where it may not write:
// as root it runs the binary as user nobody (65534) on directories owned
// by root; as another user it takes the write permission off them. A
// missing data root that cannot be made, an empty one, and one holding a
// store must each exit 1 with one line naming the path and "permission
// denied", and leave the store as it was.
func TestDataRootPermissionDenied(t *testing.T) {
	base := t.TempDir()
	// The test's directories (base and the one testing made for it) must
	// be reachable by the command's user.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(base, "good")
	if _, stderr, code := ava(t, map[string]string{"AVA_DATA_ROOT": good}, "run", "--offline", "hi"); code != 0 {
		t.Fatalf("making a store: exit %d: %s", code, stderr)
	}
	bin := filepath.Join(base, "ava")
	data, err := os.ReadFile(avaBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	asRoot := os.Geteuid() == 0
	// lock makes dir unwritable for the command.
	lock := func(dir string) {
		mode := os.FileMode(0o755) // as root: owned by root, the command runs as nobody
		if !asRoot {
			mode = 0o555
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
	}
	cases := []struct {
		name string
		root func(dir string) string
		want []string
	}{
		{"data root cannot be made", func(dir string) string { lock(dir); return filepath.Join(dir, "ava") },
			[]string{"create data root {root}: mkdir {root}: permission denied"}},
		{"empty data root", func(dir string) string { r := mkdir(t, dir, "root"); lock(r); return r },
			[]string{"open store {root}/ava.db: ", "permission denied"}},
		{"data root with a store", func(dir string) string {
			r := filepath.Join(dir, "root")
			if out, err := exec.Command("cp", "-a", good, r).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			if !asRoot {
				// Another user may read it, but not write it.
				if err := os.Chmod(filepath.Join(r, "ava.db"), 0o400); err != nil {
					t.Fatal(err)
				}
			}
			lock(r)
			return r
		}, []string{"open store {root}/ava.db: ", "permission denied"}},
	}
	for _, c := range cases {
		// ava roles reads a read-only data root: TestRolesOnReadOnlyDataRoot.
		for _, args := range [][]string{{"run", "--offline", "hi"}} {
			t.Run(c.name+"/"+args[0], func(t *testing.T) {
				dir := filepath.Join(base, strings.NewReplacer(" ", "_", "/", "_").Replace(t.Name()))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				root := c.root(dir)
				var before map[string]string
				if _, err := os.Stat(root); err == nil {
					before = tree(t, root)
				}
				out, stderr, code := runAsOther(t, bin, base, root, args...)
				if strings.Contains(out+stderr, "panic") {
					t.Fatalf("panicked:\n%s", stderr)
				}
				line := errorLine(stderr)
				if code != 1 || strings.Contains(line, "\n") || !strings.HasPrefix(line, "ava: ") {
					t.Errorf("exit %d, want 1 and one 'ava: ' line:\n%s", code, stderr)
				}
				for _, w := range c.want {
					if w = strings.ReplaceAll(w, "{root}", root); !strings.Contains(line, w) {
						t.Errorf("stderr lacks %q:\n%s", w, stderr)
					}
				}
				if before != nil {
					after := tree(t, root)
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
				}
			})
		}
	}
}

// errorLine is stderr without the offline rule's notice (a command run
// with --offline says so first, see offline.go): what is left must be
// the one error line.
func errorLine(stderr string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "[offline] ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/avaagent/ava/store"
)

// holderEnv makes the test binary a second process that opens the store
// at its value read-write (see holdFromChild).
const holderEnv = "AVA_TEST_STORE_HOLDER"

// holdFromChild is the second process's side: it opens the store,
// writes a memory for each line it reads ("ready" once it has opened,
// "wrote" after each), and closes the store when its input ends.
func holdFromChild(path string) int {
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if _, err := s.WriteMemory(ctx, store.Memory{Content: in.Text()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("wrote")
	}
	return 0
}

// holder is a second process holding the store open.
type holder struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startHolder starts a second process with the store at path open.
func startHolder(t *testing.T, path string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+path)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { h.in.Close(); h.cmd.Process.Kill(); h.cmd.Wait() })
	h.expect(t, "ready")
	return h
}

func (h *holder) expect(t *testing.T, want string) {
	t.Helper()
	line, err := h.out.ReadString('\n')
	if err != nil || line != want+"\n" {
		t.Fatalf("holder said %q, %v; want %q", line, err, want)
	}
}

// write has the holder write a memory.
func (h *holder) write(t *testing.T, content string) {
	t.Helper()
	if _, err := fmt.Fprintln(h.in, content); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "wrote")
}

// memories is what a read-only open of path sees.
func memories(t *testing.T, path string) []string {
	t.Helper()
	ro, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	mems, err := ro.RecentMemory(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range mems {
		out = append(out, m.Content)
	}
	return out
}

// TestStoreKeepsItsLogFiles: a store's last close leaves its -wal file
// (empty: checkpointed) and its -shm file, and the next open uses them
// instead of creating them again.
func TestStoreKeepsItsLogFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := openAt(t, path)
	if _, err := s.WriteMemory(t.Context(), store.Memory{Content: "one"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	inode := func(name string) uint64 {
		t.Helper()
		info, err := os.Stat(path + name)
		if err != nil {
			t.Fatalf("after a close: %v", err)
		}
		if name == "-wal" && info.Size() != 0 {
			t.Errorf("the -wal file left holds %d bytes, want none (checkpointed)", info.Size())
		}
		return info.Sys().(*syscall.Stat_t).Ino
	}
	wal, shm := inode("-wal"), inode("-shm")
	s = openAt(t, path)
	if _, err := s.WriteMemory(t.Context(), store.Memory{Content: "two"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if inode("-wal") != wal || inode("-shm") != shm {
		t.Error("the second open created the -wal or -shm file again")
	}
	if got := memories(t, path); len(got) != 2 {
		t.Errorf("memories %v, want both", got)
	}
}

// TestReadOnlyOpenBesideAnotherProcess: with the -shm file always there,
// a read-only open still tells a database another process has open (and
// reads that process's latest commits) from one nobody has open (read
// as a snapshot, writing nothing), and reads the commits a killed
// process left in the log.
func TestReadOnlyOpenBesideAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	h := startHolder(t, path)
	h.write(t, "first")
	if !mayBeInUse(path) {
		t.Error("mayBeInUse: false while another process has the store open")
	}
	if got := memories(t, path); len(got) != 1 {
		t.Errorf("beside the holder: memories %v, want its first", got)
	}
	h.write(t, "second")
	if got := memories(t, path); len(got) != 2 {
		t.Errorf("beside the holder: memories %v, want its second too", got)
	}
	h.in.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if mayBeInUse(path) {
		t.Error("mayBeInUse: true after the holder closed the store")
	}
	names, sums, mtime := dirState(t, dir)
	if got := memories(t, path); len(got) != 2 {
		t.Errorf("after the holder: memories %v, want both", got)
	}
	checkUnchanged(t, dir, names, sums, mtime)

	killed := startHolder(t, path)
	killed.write(t, "third")
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.cmd.Wait()
	if !mayBeInUse(path) {
		t.Error("mayBeInUse: false with a killed process's commit in the log")
	}
	if got := memories(t, path); len(got) != 3 {
		t.Errorf("after a killed holder: memories %v, want its third too", got)
	}
}

// proberEnv makes the test binary a second process that prints whether
// the database at its value may be in use (mayBeInUse) and exits.
const proberEnv = "AVA_TEST_STORE_PROBER"

// probedElsewhere is mayBeInUse of path as another process sees it.
func probedElsewhere(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), proberEnv+"="+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("prober: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestReadOnlyOpenByAnotherPath: a store of this process open on a file
// is seen by a read-only open reaching the same file by another path (a
// symbolic link): it reads the store's later commits, and its check for
// other processes does not drop the store's lock on the -shm file, which
// another process still sees.
func TestReadOnlyOpenByAnotherPath(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	rw := openAt(t, filepath.Join(real, FileName))
	if got := probedElsewhere(t, filepath.Join(real, FileName)); got != "true" {
		t.Fatalf("another process's mayBeInUse with the store open: %s", got)
	}
	ro, err := Open(t.Context(), filepath.Join(link, FileName), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := probedElsewhere(t, filepath.Join(real, FileName)); got != "true" {
		t.Errorf("another process's mayBeInUse after the read-only open by a link: %s (this process's lock was dropped)", got)
	}
	if _, err := rw.WriteMemory(t.Context(), store.Memory{Content: "later"}); err != nil {
		t.Fatal(err)
	}
	if mems, err := ro.RecentMemory(t.Context(), 10); err != nil || len(mems) != 1 {
		t.Errorf("read-only store by a link: memories %v, %v; want the later one", mems, err)
	}
}

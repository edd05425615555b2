package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroup is a control group made for one sandbox, capping its number of
// tasks with the pids controller. It complements RLIMIT_NPROC, which the
// kernel does not apply to a sandbox whose user is root on the host (Ava
// run as root). Made only where Ava may create one: a cgroup v2 subtree
// with the pids controller delegated, or a writable cgroup v1 pids
// hierarchy.
type cgroup struct{ dir string }

// pidsParent finds the folder where this process may create a child
// cgroup with the pids controller, or "".
func pidsParent() string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	defer f.Close()
	var v1, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case slicesContains(strings.Split(parts[1], ","), "pids"):
			v1 = parts[2]
		}
	}
	if v1 != "" {
		if dir := filepath.Join("/sys/fs/cgroup/pids", v1); writable(dir) {
			return dir
		}
	}
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		dir := filepath.Join(root, v2)
		ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err == nil && slicesContains(strings.Fields(string(ctl)), "pids") && writable(dir) {
			return dir
		}
	}
	return ""
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// writable reports whether a child cgroup can be made in dir.
func writable(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir() && unixAccessW(dir)
}

// newCgroup makes a cgroup capping tasks at max under parent.
func newCgroup(parent string, max uint64) (*cgroup, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir := filepath.Join(parent, "ava-sandbox-"+hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make cgroup: %w", err)
	}
	c := &cgroup{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatUint(max, 10)), 0o644); err != nil {
		c.remove()
		return nil, fmt.Errorf("set pids.max: %w", err)
	}
	return c, nil
}

// add moves pid (every thread of it) into the cgroup; its children are
// born there.
func (c *cgroup) add(pid int) error {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("join cgroup: %w", err)
	}
	return nil
}

// remove deletes the cgroup once its last task has gone; the kernel may
// still be tearing the sandbox's processes down, so it retries briefly.
func (c *cgroup) remove() {
	for i := 0; i < 50; i++ {
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeStaleCgroups removes the empty sandbox cgroups a killed Ava left
// behind. A cgroup with tasks cannot be removed, and a young one may be
// another Ava's, just made: both are left alone.
func removeStaleCgroups(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "ava-sandbox-*"))
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Minute {
			_ = os.Remove(d)
		}
	}
}

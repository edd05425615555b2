package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// inheritedFd opens f's descriptor again at a number of 100 or more,
// without close-on-exec, as a descriptor inherited from Ava's own parent
// (`ava 8<~/.aws/credentials`) would be, and closes it when t ends.
func inheritedFd(t *testing.T, fd uintptr) int {
	t.Helper()
	n, err := unix.FcntlInt(fd, unix.F_DUPFD, 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(n) })
	return n
}

// A descriptor Ava inherited without close-on-exec (a secret file, a
// connected socket) reaches neither the command nor the helper, and the
// helper's status pipe is out of the command's reach: the command sees
// only 0, 1 and 2, and cannot forge how it ended.
func TestInheritedDescriptorsDoNotReachTheCommand(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "credentials")
	if err := os.WriteFile(secret, []byte("aws_secret_access_key=TOPSECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fileFd := inheritedFd(t, f.Fd())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	sockFd := inheritedFd(t, raw.Fd())

	script := `ls /proc/self/fd | tr '\n' ' '; echo
cat <&` + strconv.Itoa(fileFd) + ` && echo READ-FILE
echo hi >&` + strconv.Itoa(sockFd) + ` && echo WROTE-SOCKET
for fd in 3 4 5 6 7 8 9; do echo '{"exit":{"code":0}}' >&$fd && echo "WROTE-$fd"; done
exit 7`
	ex, out := runIn(t, Spec{Argv: []string{"bash", "-c", script}})
	t.Logf("exit %+v, output:\n%s", ex, out)
	if first, _, _ := strings.Cut(out, "\n"); strings.TrimSpace(first) != "0 1 2 3" {
		t.Errorf("the command's descriptors are %q, want only 0 1 2 (and ls's own 3)", first)
	}
	if strings.Contains(out, "TOPSECRET") || strings.Contains(out, "READ-FILE") || strings.Contains(out, "WROTE-") {
		t.Error("the command used a descriptor it must not have")
	}
	if ex.Code != 7 {
		t.Errorf("exit %+v, want the command's own 7: the status was forged", ex)
	}
}

// The helper itself drops every descriptor it inherited but its spec
// and status pipes (checked from outside, where Ava's user may look).
func TestHelperClosesInheritedDescriptors(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("reading a non-dumpable helper's descriptors needs root")
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := inheritedFd(t, f.Fd())
	ws := t.TempDir()
	c, err := Command(Spec{Argv: []string{"sleep", "2"}, Workspace: ws, Scratch: t.TempDir(), Dir: ws, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	fdDir := "/proc/" + strconv.Itoa(c.Process.Pid) + "/fd"
	var fds []string
	for range 100 {
		// Wait for the helper to have read its spec (its fd 3 is closed).
		entries, _ := os.ReadDir(fdDir)
		fds = fds[:0]
		for _, e := range entries {
			fds = append(fds, e.Name())
		}
		if !slices.Contains(fds, "3") && len(fds) > 0 {
			break
		}
		exec.Command("sleep", "0.02").Run()
	}
	if slices.Contains(fds, strconv.Itoa(fd)) {
		t.Errorf("the helper still holds inherited descriptor %d (its descriptors: %v)", fd, fds)
	}
}

// A signal the command sends its helper (the namespace's first process)
// neither kills it nor makes the Go runtime dump its goroutines into the
// command's output.
func TestHelperIgnoresDumpSignals(t *testing.T) {
	script := `grep SigIgn /proc/self/status
for s in QUIT ABRT SEGV BUS ILL TRAP SYS FPE STKFLT USR1 USR2 PIPE ALRM XCPU XFSZ VTALRM PROF; do kill -s $s 1 2>/dev/null; done
sleep 0.3; echo survived; exit 5`
	ex, out := runIn(t, Spec{Argv: []string{"bash", "-c", script}})
	t.Logf("exit %+v, output:\n%s", ex, out)
	if strings.Contains(out, "goroutine") || strings.Contains(out, "SIGQUIT") {
		t.Error("the helper dumped into the command's output")
	}
	if ex.Code != 5 || !strings.Contains(out, "survived") {
		t.Errorf("exit %+v, want the command's own 5", ex)
	}
	// The command itself starts with every signal at its default.
	if !strings.Contains(out, "SigIgn:\t0000000000000000") {
		t.Error("the command inherited ignored signals from its helper")
	}
}

// io_uring, memfd_secret and vsock sockets are refused from inside; an
// ordinary socket still works.
func TestSeccompRefusesIoUringMemfdSecretVsock(t *testing.T) {
	ws := t.TempDir()
	probe := probeBinary(t, ws)
	ex, out := runIn(t, Spec{Workspace: ws, Argv: []string{probe}, Env: []string{"PATH=/usr/bin:/bin", envProbe + "=syscalls"}})
	t.Logf("exit %+v, output:\n%s", ex, out)
	for _, name := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register", "memfd_secret", "socket_vsock"} {
		got := ""
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && k == name {
				got = v
			}
		}
		if got != "EPERM" && got != "ENOSYS" {
			t.Errorf("%s: %q, want EPERM or ENOSYS", name, got)
		}
	}
	if !strings.Contains(out, "socket_unix=ok") {
		t.Error("an ordinary socket was refused")
	}
}

// At start Ava marks what it inherited close-on-exec, so not even an
// unsandboxed child (AVA_SANDBOX=off, an MCP server) gets it.
func TestCloseOnExecAbove2(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := inheritedFd(t, f.Fd())
	if err := closeOnExecAbove2(); err != nil {
		t.Fatal(err)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Error("an inherited descriptor is still passed on to children")
	}
}

// /etc is an allow-list: what shells, interpreters, git, the resolver,
// certificates and locales read is readable; anything else is not, a
// root-only file planted under a new name included, while the usual
// commands still work.
func TestEtcIsAnAllowList(t *testing.T) {
	planted := ""
	if os.Getuid() == 0 {
		planted = filepath.Join("/etc", "ava-test-secret-"+strconv.Itoa(os.Getpid()))
		if err := os.WriteFile(planted, []byte("PLANTED-SECRET"), 0o600); err == nil {
			t.Cleanup(func() { os.Remove(planted) })
		} else {
			t.Logf("cannot plant a file in /etc (%v): checking /etc/shadow only", err)
			planted = ""
		}
	}
	if _, err := os.Stat("/etc/shadow"); err != nil && planted == "" {
		t.Skip("no /etc/shadow and no planted file to probe")
	}
	script := `cat /etc/shadow && echo READ-SHADOW
[ -n "$PLANTED" ] && cat "$PLANTED" && echo READ-PLANTED
ls /etc/ssh/ssh_host_* 2>/dev/null | while read f; do cat "$f" >/dev/null && echo "READ-$f"; done
sh -c 'echo sh-ok'
id -un
grep -q localhost /etc/hosts && echo hosts-ok
git --version >/dev/null && echo git-ok
python3 -c 'import ssl, json, locale, pwd; n = ssl.create_default_context().cert_store_stats()["x509_ca"]; print("python-ok" if n > 0 else "python-no-certs", pwd.getpwuid(0).pw_name)'
exit 0`
	ex, out := runIn(t, Spec{Argv: []string{"bash", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin", "PLANTED=" + planted}})
	t.Logf("exit %+v, output:\n%s", ex, out)
	if strings.Contains(out, "READ-") || strings.Contains(out, "PLANTED-SECRET") {
		t.Error("a root-only file in /etc was readable")
	}
	want := []string{"sh-ok", "hosts-ok", "root\n"}
	if _, err := exec.LookPath("git"); err == nil {
		want = append(want, "git-ok")
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		want = append(want, "python-ok root")
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// The sandbox's /tmp, /var/tmp, /run and /dev/shm share one tmpfs sized
// from the memory limit: writing to the second does not get a fresh
// budget once the first has used it.
func TestTmpfsSharesOneBudgetFromTheMemoryLimit(t *testing.T) {
	limits := Limits{MemoryBytes: 128 << 20}
	script := `stat -f -c '%b %S' /tmp /var/tmp /dev/shm /run
head -c 40M /dev/zero > /tmp/a && echo tmp-ok
head -c 40M /dev/zero > /dev/shm/b && echo SHM-WROTE
head -c 40M /dev/zero > /var/tmp/c && echo VARTMP-WROTE
exit 0`
	ex, out := runIn(t, Spec{Argv: []string{"bash", "-c", script}, Limits: limits})
	t.Logf("exit %+v, output:\n%s", ex, out)
	if !strings.Contains(out, "tmp-ok") {
		t.Fatal("could not write 40 MiB to /tmp within a 64 MiB budget")
	}
	if strings.Contains(out, "SHM-WROTE") || strings.Contains(out, "VARTMP-WROTE") {
		t.Error("a second tmpfs mount had a budget of its own")
	}
	want := limits.withDefaults().tmpfsBytes()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[:4] {
		var blocks, size uint64
		if _, err := fmt.Sscan(line, &blocks, &size); err != nil || blocks*size != want {
			t.Errorf("tmpfs size line %q, want %d bytes", line, want)
		}
	}
}

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// envProbe makes the test binary, copied into a workspace and run in a
// sandbox, act as a probe from inside instead of running tests.
const envProbe = "AVA_SANDBOX_TEST_PROBE"

func TestMain(m *testing.M) {
	if name := os.Getenv(envProbe); name != "" {
		os.Exit(runProbe(name))
	}
	os.Exit(m.Run())
}

// runProbe runs one probe from inside a sandbox and prints its result.
func runProbe(name string) int {
	switch name {
	case "syscalls":
		probeSyscalls()
		return 0
	}
	fmt.Printf("unknown probe %q\n", name)
	return 2
}

// probeSyscalls prints, per system call the sandbox must refuse, the
// error it got ("ok" if it was allowed).
func probeSyscalls() {
	var params [120]byte // struct io_uring_params
	_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	report("io_uring_setup", e)
	_, _, e = unix.Syscall6(unix.SYS_IO_URING_ENTER, 0, 0, 0, 0, 0, 0)
	report("io_uring_enter", e)
	_, _, e = unix.Syscall6(unix.SYS_IO_URING_REGISTER, 0, 0, 0, 0, 0, 0)
	report("io_uring_register", e)
	_, _, e = unix.Syscall(unix.SYS_MEMFD_SECRET, 0, 0, 0)
	report("memfd_secret", e)
	_, _, e = unix.RawSyscall(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	report("socket_vsock", e)
	_, _, e = unix.RawSyscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)
	report("socket_unix", e)
}

func report(name string, e unix.Errno) {
	switch {
	case e == 0:
		fmt.Printf("%s=ok\n", name)
	case errors.Is(e, unix.EPERM):
		fmt.Printf("%s=EPERM\n", name)
	case errors.Is(e, unix.ENOSYS):
		fmt.Printf("%s=ENOSYS\n", name)
	default:
		fmt.Printf("%s=%s\n", name, e.Error())
	}
}

// probeBinary copies this test binary into dir, for a sandboxed command
// to run as a probe.
func probeBinary(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "probe")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

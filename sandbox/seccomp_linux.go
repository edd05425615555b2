package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in a sandbox: debugging other processes,
// mounting, entering or making namespaces, the kernel keyring, BPF,
// performance counters, loading kernels and modules, and other
// administration a contained command never needs; io_uring, whose
// operations bypass this filter (and much of the kernel's checking) and
// whose history of kernel bugs is long; memfd_secret, memory hidden even
// from the kernel's own inspection.
var deniedSyscalls = append([]uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_SYSLOG, unix.SYS_ACCT, unix.SYS_QUOTACTL,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_PIDFD_GETFD,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_ADJTIMEX, unix.SYS_CLOCK_ADJTIME,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER, unix.SYS_MEMFD_SECRET,
}, archDeniedSyscalls...)

// newNamespaceFlags are the clone flags that make namespaces.
const newNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// Offsets in struct seccomp_data.
const (
	offNr    = 0
	offArch  = 4
	offArg0  = 16 // low 32 bits on a little-endian machine
	retAllow = unix.SECCOMP_RET_ALLOW
)

// deniedSocketFamilies are the address families socket(2) refuses:
// vsock reaches the hypervisor and other virtual machines, past the
// network namespace.
var deniedSocketFamilies = []uint32{unix.AF_VSOCK}

// seccompProgram is the filter: a foreign architecture is killed, a
// denied call gets EPERM, clone asking for a namespace gets EPERM, a
// socket of a denied family gets EPERM, and clone3 (whose flags a filter
// cannot read) gets ENOSYS so that libc falls back to clone.
func seccompProgram() ([]bpf.Instruction, error) {
	if auditArch == 0 || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return nil, fmt.Errorf("no filter for %s", runtime.GOARCH)
	}
	var prog []bpf.Instruction
	prog = append(prog,
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	)
	// Placeholders: jumps are patched once the tail's place is known.
	type jump struct{ at, to int }
	var jumps []jump
	const toEPERM, toENOSYS, toClone, toSocket = 0, 1, 2, 3
	if x32Bit != 0 {
		jumps = append(jumps, jump{len(prog), toEPERM})
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit})
	}
	for _, nr := range deniedSyscalls {
		jumps = append(jumps, jump{len(prog), toEPERM})
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr)})
	}
	jumps = append(jumps, jump{len(prog), toENOSYS})
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3})
	jumps = append(jumps, jump{len(prog), toClone})
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE})
	jumps = append(jumps, jump{len(prog), toSocket})
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET})
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	clone := len(prog)
	prog = append(prog,
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: newNamespaceFlags, SkipTrue: 1},
		bpf.RetConstant{Val: retAllow},
	)
	socket := len(prog)
	prog = append(prog, bpf.LoadAbsolute{Off: offArg0, Size: 4})
	for _, family := range deniedSocketFamilies {
		jumps = append(jumps, jump{len(prog), toEPERM})
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: family})
	}
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	eperm := len(prog)
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)})
	enosys := len(prog)
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	targets := map[int]int{toEPERM: eperm, toENOSYS: enosys, toClone: clone, toSocket: socket}
	for _, j := range jumps {
		skip := targets[j.to] - j.at - 1
		if skip > 255 {
			return nil, fmt.Errorf("filter too long: jump of %d", skip)
		}
		ji := prog[j.at].(bpf.JumpIf)
		ji.SkipTrue = uint8(skip)
		prog[j.at] = ji
	}
	return prog, nil
}

// applySeccomp installs the filter on the calling thread, which forks
// the command: the command inherits it.
func applySeccomp() error {
	prog, err := seccompProgram()
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("assemble: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}

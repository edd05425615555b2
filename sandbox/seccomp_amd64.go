//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is this architecture in seccomp_data.arch.
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks x32 system call numbers, refused outright.
const x32Bit = 0x40000000

var archDeniedSyscalls = []uintptr{unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_MODIFY_LDT}

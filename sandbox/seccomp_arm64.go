//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is this architecture in seccomp_data.arch.
const auditArch = unix.AUDIT_ARCH_AARCH64

// x32Bit is zero: arm64 has no second system call table to refuse.
const x32Bit = 0

var archDeniedSyscalls []uintptr

//go:build linux && !amd64 && !arm64

package sandbox

// auditArch is zero: there is no filter for this architecture, so the
// sandbox reports seccomp as missing.
const auditArch = 0

const x32Bit = 0

var archDeniedSyscalls []uintptr

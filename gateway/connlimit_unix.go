//go:build unix

package gateway

import "syscall"

// defaultMaxConns is ConnLimits.Max's default: from the process's
// descriptor limit (Go raises the soft limit to the hard one at start).
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return maxConnsFrom(0)
	}
	return maxConnsFrom(rl.Cur)
}

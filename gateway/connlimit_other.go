//go:build !unix

package gateway

// defaultMaxConns is ConnLimits.Max's default where the descriptor limit
// cannot be read.
func defaultMaxConns() int { return 1024 }

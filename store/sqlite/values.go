package sqlite

import (
	"strings"
)

// Times are stored as INTEGER Unix nanoseconds, which round-trip exactly
// and sort correctly.

// placeholders returns "?, ?, …" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// stringArgs converts strings to query arguments.
func stringArgs[S ~string](ss []S) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}

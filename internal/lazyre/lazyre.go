// Package lazyre compiles a regular expression the first time it is
// used instead of when its package is initialised: every Ava command
// initialises every package linked into the binary, and most commands
// never use most of their patterns.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr at its first call and
// returns the same *regexp.Regexp from then on. expr must compile (it
// panics otherwise, as regexp.MustCompile does): the patterns are the
// program's own, and any test that uses one finds a bad one.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

package ava

import "runtime/debug"

// version is Ava's version when the build sets it:
// go build -ldflags "-X github.com/avaagent/ava.version=v1.2.3".
var version string

// Version is Ava's version: the one the build set with -ldflags, else
// the module version go install recorded (v1.2.3), else "dev" (a build
// from a checkout).
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
			if m != nil && m.Path == "github.com/avaagent/ava" && m.Version != "" && m.Version != "(devel)" {
				return m.Version
			}
		}
	}
	return "dev"
}

// Package initgc keeps the garbage collector off while a command starts,
// for a command-line program that starts often.
//
// Package initialisation of the SDKs and libraries linked into the ava
// binary allocates a few megabytes of long-lived tables (regular
// expressions, maps, type caches) and almost no garbage, and a command's
// first steps (reading its configuration, opening the store, building
// its first model request) little more; yet with the default settings
// the heap passes the collector's first goal (4 MB) on the way, and a
// collection marks beside the start: one to two milliseconds of every
// command's start spent on nothing it needs.
//
// Go initialises packages in the order of their import paths among
// those whose imports are initialised; this one waits only for a few
// packages of the standard library (os, time), so it runs before most
// of the libraries (measured: after 192 of 342 packages, which had
// allocated 0.5 MB, far under the collector's first goal). It turns
// the collector off and bounds the heap instead by a memory limit
// (startLimit, or GOMEMLIMIT's if lower), so a start that does allocate
// much is still collected. The program's main calls RestoreAfter, which
// puts back the collector's settings (GOGC's, or 100; GOMEMLIMIT's, or
// none) once the start is over.
//
// Import it from a main package only: a library that embeds Ava keeps
// its own collector settings.
package initgc

import (
	"runtime/debug"
	"sync"
	"time"
)

// startLimit bounds the memory of the Go runtime while the collector is
// off: far above a command's start (a few megabytes) and far below any
// machine's memory.
const startLimit = 64 << 20

var (
	// percent and limit are the collector's settings before init
	// changed them.
	percent = debug.SetGCPercent(-1)
	limit   = debug.SetMemoryLimit(min(debug.SetMemoryLimit(-1), startLimit))

	once sync.Once
)

// Restore puts the collector's settings back as they were before package
// initialisation. Calling it again does nothing more.
func Restore() {
	once.Do(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

// RestoreAfter calls Restore after d, by when a command's start is over
// (its first model request sent, its server answering).
func RestoreAfter(d time.Duration) {
	time.AfterFunc(d, Restore)
}

// Package initgc keeps the garbage collector off while the program's
// packages initialise, for a command-line program that starts often.
//
// Package initialisation of the SDKs and libraries linked into the ava
// binary allocates a few megabytes of long-lived tables (regular
// expressions, maps, type caches) and almost no garbage, yet with the
// default settings it triggers a collection whose marking runs beside
// it: about a millisecond of every command's start spent on nothing.
// Go initialises a package as soon as the packages it imports are
// (ordered by import path among those ready), and this one imports
// only the runtime, so it runs before the libraries do. The program's
// main calls Restore first thing, which puts back the collector's
// setting (GOGC's, or 100).
//
// Import it from a main package only: a library that embeds Ava keeps
// its own collector settings.
package initgc

import "runtime/debug"

// percent is the collector's setting before init turned it off.
var percent = debug.SetGCPercent(-1)

// Restore puts the collector's setting back as it was before package
// initialisation. Calling it again does nothing more.
func Restore() {
	if percent != -2 {
		debug.SetGCPercent(percent)
		percent = -2
	}
}

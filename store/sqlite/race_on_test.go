//go:build race

package sqlite

// raceEnabled scales the heaviest stress tests down under the race detector.
const raceEnabled = true

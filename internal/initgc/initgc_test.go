package initgc

import (
	"os"
	"runtime/debug"
	"strconv"
	"testing"
)

// TestOffUntilRestored: the collector is off after package
// initialisation and back at GOGC's setting (100 without it) after
// Restore, which a second call does not change.
func TestOffUntilRestored(t *testing.T) {
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("during initialisation the collector is at %d, want off (-1)", got)
	}
	want := 100
	if v, err := strconv.Atoi(os.Getenv("GOGC")); err == nil {
		want = v
	} else if os.Getenv("GOGC") == "off" {
		want = -1
	}
	Restore()
	Restore()
	if got := debug.SetGCPercent(want); got != want {
		t.Fatalf("after Restore the collector is at %d, want %d", got, want)
	}
}

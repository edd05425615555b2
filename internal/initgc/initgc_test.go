package initgc

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

// TestOffUntilRestored: the collector is off and the memory bounded
// after package initialisation, and both are back at GOGC's and
// GOMEMLIMIT's settings (100 and none without them) after Restore,
// which a second call does not change.
func TestOffUntilRestored(t *testing.T) {
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("during the start the collector is at %d, want off (-1)", got)
	}
	if got := debug.SetMemoryLimit(-1); got > startLimit {
		t.Fatalf("during the start the memory limit is %d, want at most %d", got, startLimit)
	}
	want := 100
	if v, err := strconv.Atoi(os.Getenv("GOGC")); err == nil {
		want = v
	} else if os.Getenv("GOGC") == "off" {
		want = -1
	}
	RestoreAfter(time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	Restore()
	if got := debug.SetGCPercent(want); got != want {
		t.Fatalf("after Restore the collector is at %d, want %d", got, want)
	}
	if got := debug.SetMemoryLimit(-1); os.Getenv("GOMEMLIMIT") == "" && got != math.MaxInt64 {
		t.Fatalf("after Restore the memory limit is %d, want none", got)
	}
}

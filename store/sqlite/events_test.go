package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/avaagent/ava/store/storetest"
)

// publisherEnv makes the test binary a second process publishing to the
// store at its value (see TestMain).
const publisherEnv = "AVA_TEST_EVENT_PUBLISHER"

// seqLoad publishes 100,000 events across 50 sessions, a tenth of that
// under the race detector (which makes it ~9x slower); .ci/run also runs
// the full count without it.
var seqLoad = storetest.Sequences{Sessions: 50, Workers: 20, PerWorker: seqPerWorker()}

// seqPerWorker is how many events each goroutine publishes.
func seqPerWorker() int {
	if raceEnabled {
		return 250
	}
	return 2_500
}

// publishFromChild is the second process's side: its own store handle
// and hub on the same file.
func publishFromChild(path string) int {
	return seqLoad.Child(func() (storetest.LogCloser, error) {
		return Open(context.Background(), path, Options{})
	})
}

// TestHundredThousandEventsTwoProcesses publishes 100,000 events (10,000
// under -race) across 50 sessions from concurrent goroutines in this
// process and in a second one, on one SQLite file: every session's
// numbers go 1, 2, 3, … with none reused or skipped.
func TestHundredThousandEventsTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 100,000 events")
	}
	path := filepath.Join(t.TempDir(), FileName)
	seqLoad.TwoProcesses(t, openAt(t, path), publisherEnv, path)
}

package postgres_test

import (
	"context"
	"testing"

	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/storetest"
)

// publisherEnv makes the test binary a second process publishing to the
// database at its value (see TestMain).
const publisherEnv = "AVA_TEST_PG_EVENT_PUBLISHER"

// seqLoad is the events published from each process.
var seqLoad = storetest.Sequences{Sessions: 10, Workers: 8, PerWorker: 150}

// publishFromChild is the second process's side: its own pool and hub on
// the same database.
func publishFromChild(url string) int {
	return seqLoad.Child(func() (storetest.LogCloser, error) {
		return postgres.Open(context.Background(), url, postgres.Options{})
	})
}

// TestEventsTwoProcesses publishes events to the same sessions from
// concurrent goroutines in this process and in a second one, on one
// database: every session's numbers go 1, 2, 3, … with none reused or
// skipped.
func TestEventsTwoProcesses(t *testing.T) {
	url := pgtest.URL(t)
	seqLoad.TwoProcesses(t, openAt(t, url), publisherEnv, url)
}

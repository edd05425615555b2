package postgres_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// publisherEnv makes the test binary a second process publishing to the
// database at its value (see TestMain).
const publisherEnv = "AVA_TEST_PG_EVENT_PUBLISHER"

const (
	seqSessions  = 10
	seqWorkers   = 8 // goroutines per process
	seqPerWorker = 150
)

// publishMany publishes seqPerWorker events from each of seqWorkers
// goroutines through one hub, spread over seqSessions sessions.
func publishMany(h *event.Hub) error {
	var wg sync.WaitGroup
	errs := make(chan error, seqWorkers)
	for w := range seqWorkers {
		wg.Go(func() {
			for i := range seqPerWorker {
				ev := event.New(event.ToolCall, event.ToolCallContent{ID: strconv.Itoa(i), Name: "read_file"})
				ev.Session, ev.Agent = fmt.Sprintf("ava:cli:s%02d", (w+i)%seqSessions), event.OrchestratorID
				if _, err := h.Publish(ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// publishFromChild is the second process's side: its own pool and hub on
// the same database.
func publishFromChild(url string) int {
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	if err := publishMany(event.NewHub(s)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestEventsTwoProcesses publishes events to the same sessions from
// concurrent goroutines in this process and in a second one, on one
// database: every session's numbers go 1, 2, 3, … with none reused or
// skipped.
func TestEventsTwoProcesses(t *testing.T) {
	url := pgtest.URL(t)
	s := openAt(t, url)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), publisherEnv+"="+url)
	out, err := os.CreateTemp(t.TempDir(), "child")
	if err != nil {
		t.Fatal(err)
	}
	child.Stdout, child.Stderr = out, out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	mine := publishMany(event.NewHub(s))
	if err := child.Wait(); err != nil {
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("second process: %v\n%s", err, b)
	}
	if mine != nil {
		t.Fatal(mine)
	}
	total := 0
	for i := range seqSessions {
		session := fmt.Sprintf("ava:cli:s%02d", i)
		evs, err := s.ReadEvents(context.Background(), session, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j, ev := range evs {
			if ev.Seq != uint64(j+1) {
				t.Fatalf("%s: event %d has #%d", session, j, ev.Seq)
			}
		}
		last, err := s.LastSeq(context.Background(), session)
		if err != nil || last != uint64(len(evs)) {
			t.Fatalf("%s: LastSeq = %d, %v; want %d", session, last, err, len(evs))
		}
		total += len(evs)
	}
	if want := 2 * seqWorkers * seqPerWorker; total != want {
		t.Fatalf("%d events stored, want %d", total, want)
	}
}

package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/avaagent/ava/event"
)

// publisherEnv makes the test binary a second process publishing to the
// store at its value (see TestMain).
const publisherEnv = "AVA_TEST_EVENT_PUBLISHER"

const (
	seqSessions = 50
	seqWorkers  = 20 // goroutines per process
)

// seqPerWorker is how many events each goroutine publishes: 100,000 in
// all, a tenth of that under the race detector (which makes it ~9x
// slower); .ci/run also runs the full count without it.
func seqPerWorker() int {
	if raceEnabled {
		return 250
	}
	return 2_500
}

// publishMany publishes seqPerWorker events from each of seqWorkers
// goroutines through one hub, spread over seqSessions sessions.
func publishMany(h *event.Hub) error {
	var wg sync.WaitGroup
	errs := make(chan error, seqWorkers)
	for w := 0; w < seqWorkers; w++ {
		wg.Go(func() {
			for i := 0; i < seqPerWorker(); i++ {
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

// publishFromChild is the second process's side: its own store handle
// and hub on the same file.
func publishFromChild(path string) int {
	s, err := Open(context.Background(), path, Options{})
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

// TestHundredThousandEventsTwoProcesses publishes 100,000 events (10,000
// under -race) across
// 50 sessions from concurrent goroutines in this process and in a second
// one, on one SQLite file: every session's numbers go 1, 2, 3, … with none
// reused or skipped.
func TestHundredThousandEventsTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 100,000 events")
	}
	path := filepath.Join(t.TempDir(), FileName)
	s := openAt(t, path)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), publisherEnv+"="+path)
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
	for i := 0; i < seqSessions; i++ {
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
		total += len(evs)
	}
	if want := 2 * seqWorkers * seqPerWorker(); total != want {
		t.Fatalf("%d events stored, want %d", total, want)
	}
}

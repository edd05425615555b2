package storetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/avaagent/ava/event"
)

// Sequences is a load on a backend's event log from two processes: each
// publishes PerWorker events from each of Workers goroutines through its
// own hub, spread over Sessions sessions. Every session's numbers must go
// 1, 2, 3, … with none reused or skipped.
type Sequences struct {
	Sessions, Workers, PerWorker int
}

// session names the i-th session of the load.
func (q Sequences) session(i int) string { return fmt.Sprintf("ava:cli:s%02d", i) }

// Publish publishes this process's share of the load through h.
func (q Sequences) Publish(h *event.Hub) error {
	var wg sync.WaitGroup
	errs := make(chan error, q.Workers)
	for w := range q.Workers {
		wg.Go(func() {
			for i := range q.PerWorker {
				ev := event.New(event.ToolCall, event.ToolCallContent{ID: strconv.Itoa(i), Name: "read_file"})
				ev.Session, ev.Agent = q.session((w+i)%q.Sessions), event.OrchestratorID
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

// Child is the second process's side, called from TestMain when the
// environment names the store: it publishes its share on the log open
// returns and gives the exit code.
func (q Sequences) Child(open func() (LogCloser, error)) int {
	l, err := open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	if err := q.Publish(event.NewHub(l)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// LogCloser is an event log to close after use: a store.
type LogCloser interface {
	event.Log
	io.Closer
}

// TwoProcesses runs the load on l from this process and from a second
// one (this test binary again, with env set to where, which its TestMain
// hands to Child), and checks every session's numbers and LastSeq.
func (q Sequences) TwoProcesses(t *testing.T, l event.Log, env, where string) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), env+"="+where)
	out, err := os.CreateTemp(t.TempDir(), "child")
	if err != nil {
		t.Fatal(err)
	}
	child.Stdout, child.Stderr = out, out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	mine := q.Publish(event.NewHub(l))
	if err := child.Wait(); err != nil {
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("second process: %v\n%s", err, b)
	}
	if mine != nil {
		t.Fatal(mine)
	}
	total := 0
	for i := range q.Sessions {
		session := q.session(i)
		evs, err := l.ReadEvents(context.Background(), session, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j, ev := range evs {
			if ev.Seq != uint64(j+1) {
				t.Fatalf("%s: event %d has #%d", session, j, ev.Seq)
			}
		}
		last, err := l.LastSeq(context.Background(), session)
		if err != nil || last != uint64(len(evs)) {
			t.Fatalf("%s: LastSeq = %d, %v; want %d", session, last, err, len(evs))
		}
		total += len(evs)
	}
	if want := 2 * q.Workers * q.PerWorker; total != want {
		t.Fatalf("%d events stored, want %d", total, want)
	}
}

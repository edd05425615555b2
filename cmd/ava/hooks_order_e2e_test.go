package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/hooks"
	"github.com/avaagent/ava/lifecycle"
)

// holdingReceiver is a webhook endpoint that, while holding, keeps the
// next request open until its client goes away (an attempt in flight
// when its process is killed), and accepts every other request.
type holdingReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hold bool
	held []received // the requests kept open
	got  []received // the requests accepted, in order
	bad  []string
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	t.Helper()
	r := &holdingReceiver{hold: true}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *holdingReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := hooks.Verify(req.Header.Get(hooks.HeaderSignature), []byte(hookSecret), body, time.Now(), 5*time.Minute); err != nil {
		r.mu.Lock()
		r.bad = append(r.bad, err.Error())
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	got := received{delivery: req.Header.Get(hooks.HeaderDelivery), event: req.Header.Get(hooks.HeaderEvent), body: m}
	r.mu.Lock()
	if r.hold {
		r.hold = false
		r.held = append(r.held, got)
		r.mu.Unlock()
		<-req.Context().Done() // its process was killed
		return
	}
	r.got = append(r.got, got)
	r.mu.Unlock()
}

func (r *holdingReceiver) snapshot() (held, got []received) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.held), slices.Clone(r.got)
}

// TestKilledDaemonsHookDeliveriesGoOutInOrderAtOnce: a daemon killed
// (SIGKILL) while its webhook attempt hangs leaves that delivery claimed
// for 510 s (the webhook's 60 s timeout ×8 + 30 s) and its runs' later
// deliveries pending. The next daemon on the data root finds the dead
// process gone at its start and delivers everything within seconds,
// each run's start before its complete, the interrupted delivery again
// under its ID, and each event once.
func TestKilledDaemonsHookDeliveriesGoOutInOrderAtOnce(t *testing.T) {
	const n = 3
	env, _ := hooksEnv(t)
	rcv := newHoldingReceiver(t)
	log := filepath.Join(t.TempDir(), "events.jsonl")
	hookConfig(t, envValue(env, "AVA_DATA_ROOT"), log, rcv.srv.URL, []string{"subagent:start", "subagent:complete"}, "    timeout: 60s\n")
	env = append(env, "AVA_TEST_HOOK_SECRET="+hookSecret)
	d := startDaemon(t, env)
	first := chatText(t, d.c, client.ChatRequest{Message: "hello"})
	var jobs []job
	for i := range n {
		sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: fmt.Sprintf("QUICK %d", i), Model: spawnModel, Parent: first.Session})
		must(t, err)
		jobs = append(jobs, job{id: sa.ID})
	}
	waitAll(t, d.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	// Every event is recorded, the first webhook attempt hangs, the rest
	// wait behind it.
	waitFor(t, func() bool {
		list, err := d.c.Hooks(bg(t), "all")
		must(t, err)
		web := 0
		for _, dl := range list.Deliveries {
			if dl.Kind == "url" {
				web++
			}
		}
		held, _ := rcv.snapshot()
		return web == 2*n && len(held) == 1
	})
	kill(t, d)

	restart := time.Now()
	d2 := startDaemon(t, env)
	waitFor(t, func() bool { _, got := rcv.snapshot(); return len(got) >= 2*n })
	took := time.Since(restart)
	time.Sleep(1500 * time.Millisecond) // a repeat would come within the poll interval
	held, got := rcv.snapshot()
	t.Logf("all %d webhook events %s after the restart; the held one was %s %v", len(got), took.Round(time.Millisecond), held[0].event, held[0].body["jobId"])
	if took > 20*time.Second {
		t.Errorf("the killed daemon's deliveries took %s after the restart, want seconds (not its 510 s claim)", took)
	}
	rcv.mu.Lock()
	if len(rcv.bad) > 0 {
		t.Errorf("requests refused by the receiver: %v", rcv.bad)
	}
	rcv.mu.Unlock()
	onceEach(t, "the webhook", bodies(got))
	ids := map[string]string{}
	for _, r := range got {
		if prev, dup := ids[r.delivery]; dup {
			t.Errorf("delivery ID %s carried %s and %s", r.delivery, prev, key(r.body))
		}
		ids[r.delivery] = key(r.body)
	}
	if ids[held[0].delivery] != key(held[0].body) {
		t.Errorf("the interrupted delivery %s (%s) came again as %q", held[0].delivery, key(held[0].body), ids[held[0].delivery])
	}
	inOrder(t, "the webhook", bodies(got), jobs)
	inOrder(t, "the command", commandEvents(t, log), jobs)
	list, err := d2.c.Hooks(bg(t), "")
	must(t, err)
	if len(list.Deliveries) != 0 {
		t.Errorf("deliveries still waiting: %+v", list.Deliveries)
	}
}

// inOrder fails unless each job's subagent:start came before its
// subagent:complete in ms (both there).
func inOrder(t *testing.T, who string, ms []map[string]any, jobs []job) {
	t.Helper()
	at := map[string]int{}
	for i, m := range ms {
		if _, ok := at[key(m)]; !ok {
			at[key(m)] = i
		}
	}
	for _, j := range jobs {
		start, okS := at["subagent:start "+j.id]
		complete, okC := at["subagent:complete "+j.id]
		if !okS || !okC || start > complete {
			t.Errorf("%s got %s's start at %d (%v) and its complete at %d (%v), want both, the start first", who, j.id, start, okS, complete, okC)
		}
	}
}

// TestHookDeliveryIDsNotReusedAfterTheDatabaseIsMovedAside: ava.db moved
// aside (what docs/cli.md advises for a damaged one) and a new one
// started: the new database's deliveries carry IDs the receiver never
// saw, although its rows count from 1 again.
func TestHookDeliveryIDsNotReusedAfterTheDatabaseIsMovedAside(t *testing.T) {
	env, _ := hooksEnv(t)
	data := envValue(env, "AVA_DATA_ROOT")
	rcv := newReceiver(t, true)
	hookConfig(t, data, filepath.Join(t.TempDir(), "events.jsonl"), rcv.srv.URL, []string{"subagent:start", "subagent:complete"}, "")
	env = append(env, "AVA_TEST_HOOK_SECRET="+hookSecret)
	run := func(want int) {
		t.Helper()
		d := startDaemon(t, env)
		first := chatText(t, d.c, client.ChatRequest{Message: "hello"})
		sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "QUICK once", Model: spawnModel, Parent: first.Session})
		must(t, err)
		waitAll(t, d.c, []job{{id: sa.ID}}, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
		waitFor(t, func() bool { return len(rcv.events()) >= want })
		must(t, d.cmd.Process.Signal(os.Interrupt))
		d.exitCode(t)
	}
	run(2)
	for _, f := range []string{"ava.db", "ava.db-wal", "ava.db-shm"} {
		if err := os.Rename(filepath.Join(data, f), filepath.Join(data, f+".damaged")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	run(4)
	got := rcv.events()
	if len(got) != 4 {
		t.Fatalf("webhook got %d events, want 4", len(got))
	}
	ids := map[string]string{}
	for _, r := range got {
		if prev, dup := ids[r.delivery]; dup || r.delivery == "" {
			t.Errorf("delivery ID %q carried %s and %s", r.delivery, prev, key(r.body))
		}
		ids[r.delivery] = key(r.body)
	}
}

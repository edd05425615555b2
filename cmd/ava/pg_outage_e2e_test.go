package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// TestClusterPostgresRestart: PostgreSQL restarted (fast shutdown, about
// a second down) under a gateway and two workers with busy runs, some
// still queued: the gateway's /readyz answers 503 while the database is
// down; afterwards every run ends, once (one end entry in the session
// files, one result in the parent), none is ended for the outage, and
// the parent session leaves waiting_for_subagents.
func TestClusterPostgresRestart(t *testing.T) {
	testClusterOutage(t, nil, func(srv *pgtest.Server) {
		srv.Stop()
		time.Sleep(time.Second)
		srv.Start()
	})
}

// TestClusterPostgresPaused: the same with the database paused
// (SIGSTOP of the server and its backends) for three seconds: open
// connections hang rather than fail, then go on.
func TestClusterPostgresPaused(t *testing.T) {
	testClusterOutage(t, nil, func(srv *pgtest.Server) {
		srv.Pause()
		time.Sleep(3 * time.Second)
		srv.Resume()
	})
}

// TestClusterPostgresPausedPastTheLease: the database paused for four
// times the lease (3 s) under live workers. Every process's heartbeat is
// 12 s old when it comes back; none is declared gone for it, so no run
// is taken over (attempts 0: the work is not repeated) and none ends
// for the outage (issue 39 items 2, 4 and 5). Before, the first process
// to look took the other worker's runs over at once.
//
// AVA_TEST_PG_PAUSE sets a longer pause for a probe by hand (e.g. 70s,
// past the hub's 60 s bound); the suite uses 12 s.
func TestClusterPostgresPausedPastTheLease(t *testing.T) {
	pause := 12 * time.Second
	if d, err := time.ParseDuration(os.Getenv("AVA_TEST_PG_PAUSE")); err == nil {
		pause = d
	}
	testClusterOutage(t, []string{"AVA_LEASE_TTL=3s"}, func(srv *pgtest.Server) {
		srv.Pause()
		time.Sleep(pause)
		srv.Resume()
	})
}

// testClusterOutage runs 24 busy subagents on two workers (nine slots
// each, so some wait in the queue), applies outage to the database
// while they run and checks that every run ends once.
func testClusterOutage(t *testing.T, env []string, outage func(*pgtest.Server)) {
	const n = 24
	srv := pgtest.Private(t)
	cl := newClusterOn(t, srv.URL())
	gw := cl.start("gateway", append([]string{"AVA_RECOVER_EVERY=1s"}, env...)...)
	procs := []*daemon{gw}
	for range 2 {
		procs = append(procs, cl.start("worker", append([]string{"AVA_RECOVER_EVERY=1s", "AVA_MAX_CONCURRENT_SUBAGENTS=9"}, env...)...))
	}
	defer func() {
		if !t.Failed() {
			return
		}
		for i, d := range procs {
			t.Logf("process %d: %s", i, errorLines(d.stderr.String(), 8))
		}
	}()
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "BUSY", n)
	waitSome(t, gw.c, jobs, 6, func(sa client.Subagent) bool { return sa.Status == "running" && sa.Iteration >= 1 })

	down := time.Now()
	unready := make(chan int, 1)
	go func() { unready <- waitReadyz(gw.addr, http.StatusServiceUnavailable, 5*time.Second) }()
	outage(srv)
	t.Logf("database out for %s", time.Since(down).Round(time.Millisecond))
	if code := <-unready; code != http.StatusServiceUnavailable {
		t.Errorf("/readyz answered %d while the database was out, want 503", code)
	}
	if code := waitReadyz(gw.addr, http.StatusOK, 30*time.Second); code != http.StatusOK {
		t.Errorf("/readyz answered %d after the database came back, want 200", code)
	}

	ended := time.Now()
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	t.Logf("every run ended %s after the database came back", time.Since(ended).Round(time.Millisecond))

	st := cl.store()
	ctx := context.Background()
	counts := map[string]int{}
	for _, j := range jobs {
		r, err := st.GetRun(ctx, j.id)
		if err != nil {
			t.Fatal(err)
		}
		counts[string(r.Status)]++
		if r.Status != lifecycle.Success || r.Attempts != 0 {
			t.Errorf("%s: %s attempts=%d %q (want success, never taken over)", j.id, r.Status, r.Attempts, r.Error)
		}
	}
	t.Logf("runs by status: %v", counts)
	deliveredOnce(t, st, first.Session, jobs)
	for _, j := range jobs { // announced in its own write after the end
		if r, err := st.GetRun(ctx, j.id); err != nil || !r.Announced {
			t.Errorf("%s: announced=%v (%v) once its result reached the parent", j.id, r.Announced, err)
		}
	}
	entries := cl.lifecycleEntries(t)
	for _, j := range jobs {
		var types []string
		for _, e := range entries[j.id] {
			types = append(types, string(e.EventType))
		}
		if fmt.Sprint(types) != fmt.Sprint([]string{"subagent:start", "subagent:complete"}) &&
			fmt.Sprint(types) != fmt.Sprint([]string{"subagent:queued", "subagent:start", "subagent:complete"}) {
			t.Errorf("%s: lifecycle entries %v, want one start and one end", j.id, types)
		}
	}
	waitState(t, gw.c, first.Session, func(s string) bool { return s != "waiting_for_subagents" })
	if t.Failed() {
		t.Logf("PostgreSQL log:\n%s", tail(srv.Log(), 40))
	}
}

// newClusterOn is newCluster on the database at url.
func newClusterOn(t *testing.T, url string) *cluster {
	t.Helper()
	c := newCluster(t)
	c.url = url
	return c
}

// lifecycleEntries reads the lifecycle entries of every process's
// session files, by job.
func (c *cluster) lifecycleEntries(t *testing.T) map[string][]audit.LifecycleEntry {
	t.Helper()
	entries := map[string][]audit.LifecycleEntry{}
	files, _ := filepath.Glob(filepath.Join(c.root, "data-*", "sessions", "*.jsonl"))
	for _, f := range files {
		err := audit.ScanLifecycle(f, func(e audit.LifecycleEntry) error {
			entries[e.JobID] = append(entries[e.JobID], e)
			return nil
		}, func(s audit.Skip) { t.Logf("skipped in %s: %+v", f, s) })
		if err != nil {
			t.Fatalf("scan %s: %v", f, err)
		}
	}
	return entries
}

// waitSome waits until ok holds for at least want of jobs.
func waitSome(t *testing.T, c *client.Client, jobs []job, want int, ok func(client.Subagent) bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		got := 0
		for _, j := range jobs {
			if sa, err := c.Subagent(context.Background(), j.id); err == nil && ok(sa) {
				got++
			}
		}
		if got >= want {
			return
		}
	}
	statuses := map[string]int{}
	for _, j := range jobs {
		sa, _ := c.Subagent(context.Background(), j.id)
		statuses[sa.Status]++
	}
	t.Fatalf("fewer than %d of %d runs got there: %v", want, len(jobs), statuses)
}

// waitReadyz polls GET /readyz until it answers want or within is over,
// and returns the last answer's code (0: none).
func waitReadyz(addr string, want int, within time.Duration) int {
	code := 0
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		cancel()
		if code == want {
			break
		}
	}
	return code
}

// waitState waits until the session's state satisfies ok.
func waitState(t *testing.T, c *client.Client, key string, ok func(string) bool) {
	t.Helper()
	var s client.Session
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s, err = c.Session(context.Background(), key); err == nil && ok(s.State) {
			return
		}
	}
	t.Errorf("session %s: state %q (%v)", key, s.State, err)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestClusterKilledGatewayInstanceRemoved: a gateway killed with SIGKILL
// owns no run, yet a worker's recovery removes its instance row; the
// other gateway's stays.
func TestClusterKilledGatewayInstanceRemoved(t *testing.T) {
	cl := newCluster(t)
	g1, g2 := cl.start("gateway"), cl.start("gateway")
	cl.start("worker", "AVA_RECOVER_EVERY=1s")
	st := cl.store()
	ctx := context.Background()
	registered := func() map[int]bool {
		all, err := st.Instances(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pids := map[int]bool{}
		for _, in := range all {
			pids[in.PID] = true
		}
		return pids
	}
	if pids := registered(); !pids[g2.cmd.Process.Pid] {
		t.Fatalf("the gateway is not registered: %v", pids)
	}
	dead := g2.cmd.Process.Pid
	kill(t, g2)
	killed := time.Now()
	for registered()[dead] {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("the killed gateway's instance is still registered %s later", time.Since(killed).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the killed gateway's instance removed %s after the kill", time.Since(killed).Round(time.Millisecond))
	if !registered()[g1.cmd.Process.Pid] {
		t.Fatal("the live gateway's instance was removed")
	}
}

// errorLines counts the error and warning lines of a process's log and
// shows the first max of them.
func errorLines(log string, max int) string {
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
			lines = append(lines, l)
		}
	}
	n := len(lines)
	return fmt.Sprintf("%d error and warning lines\n%s", n, strings.Join(lines[:min(n, max)], "\n"))
}

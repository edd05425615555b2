package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// The measurements of the cluster on PostgreSQL reported in
// docs/benchmarks.md ("Cluster on PostgreSQL"). Run with
//
//	AVA_BENCH=1 AVA_REQUIRE_POSTGRES=1 go test -count=1 -run TestClusterBench -v -timeout 20m ./cmd/ava/

func benchOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("AVA_BENCH") == "" {
		t.Skip("set AVA_BENCH=1 to measure")
	}
}

// latencyServer is a fake OpenAI server that notes when the first
// request of each subagent arrives, keyed by the number in the
// "LATMARK-<n>-END" its task holds.
type latencyServer struct {
	*llmfake.Server
	mu    sync.Mutex
	first map[int]time.Time
	seen  map[int]chan struct{}
}

var latMark = regexp.MustCompile(`LATMARK-(\d+)-END`)

func newLatencyServer(t *testing.T) *latencyServer {
	s := &latencyServer{Server: llmfake.NewOpenAI(t), first: map[int]time.Time{}, seen: map[int]chan struct{}{}}
	s.Respond = func(r llmfake.Request) llmfake.Turn {
		now := time.Now()
		if m := latMark.FindSubmatch(r.Raw); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			s.mu.Lock()
			if _, ok := s.first[n]; !ok {
				s.first[n] = now
				close(s.ch(n))
			}
			s.mu.Unlock()
		}
		return llmfake.Turn{Text: `{"summary":"ok","output":{"a":1},"confidence":0.9}`, Usage: llm.Usage{InputTokens: 5, OutputTokens: 5}}
	}
	return s
}

// ch is n's arrival channel; s.mu held.
func (s *latencyServer) ch(n int) chan struct{} {
	c, ok := s.seen[n]
	if !ok {
		c = make(chan struct{})
		s.seen[n] = c
	}
	return c
}

// await waits for subagent n's first request and returns its arrival.
func (s *latencyServer) await(t *testing.T, n int) time.Time {
	t.Helper()
	s.mu.Lock()
	c := s.ch(n)
	s.mu.Unlock()
	select {
	case <-c:
	case <-time.After(60 * time.Second):
		t.Fatalf("no model request for subagent %d", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first[n]
}

// quantiles returns the median, p90 and max of ds (sorted in place).
func quantiles(ds []time.Duration) (med, p90, top time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	n := len(ds)
	return ds[n/2], ds[(9*n+9)/10-1], ds[n-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// measureSpawnLatency spawns n subagents one at a time (after warm
// unmeasured ones) and returns each one's time from just before Spawn to
// its first model request; each is waited to its end (and then gap)
// before the next.
func measureSpawnLatency(t *testing.T, c *client.Client, fake *latencyServer, model string, warm, n int, gap time.Duration) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := range warm + n {
		start := time.Now()
		sa, _, err := c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: fmt.Sprintf("say ok LATMARK-%d-END", i), Model: model})
		if err != nil {
			t.Fatal(err)
		}
		arrived := fake.await(t, i)
		if i >= warm {
			out = append(out, arrived.Sub(start))
			if d := arrived.Sub(start); d > 50*time.Millisecond {
				t.Logf("spawn %d: %s to its first model request", i, ms(d))
			}
		}
		waitAll(t, c, []job{{id: sa.ID}}, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
		time.Sleep(gap)
	}
	return out
}

// TestClusterBenchSpawnLatency: spawn → first model request through a
// gateway with one worker on PostgreSQL, and on an embedded (SQLite)
// daemon for comparison.
func TestClusterBenchSpawnLatency(t *testing.T) {
	benchOnly(t)
	n := envInt("AVA_BENCH_SPAWNS", 50)
	const warm = 5
	const model = "openai/llama3.2"
	// AVA_BENCH_SPAWN_GAP_MS spaces the spawns further: without it, one
	// follows the previous one's end (seen by polling every 100 ms).
	gap := time.Duration(envInt("AVA_BENCH_SPAWN_GAP_MS", 0)) * time.Millisecond

	embedded := func() {
		fake := newLatencyServer(t)
		env, _ := daemonEnv(t)
		d := startDaemon(t, append(env, "AVA_MODEL="+model, "OPENAI_BASE_URL="+fake.URL+"/v1"))
		ds := measureSpawnLatency(t, d.c, fake, model, warm, n, gap)
		med, p90, top := quantiles(ds)
		t.Logf("embedded (SQLite) spawn → first model request over %d (gap %s): median %s, p90 %s, max %s", n, gap, ms(med), ms(p90), ms(top))
	}
	clustered := func() {
		fake := newLatencyServer(t)
		cl := newCluster(t)
		extra := []string{"AVA_MODEL=" + model, "OPENAI_BASE_URL=" + fake.URL + "/v1"}
		gw := cl.start("gateway", extra...)
		cl.start("worker", extra...)
		ds := measureSpawnLatency(t, gw.c, fake, model, warm, n, gap)
		med, p90, top := quantiles(ds)
		t.Logf("cluster (gateway + 1 worker, PostgreSQL) spawn → first model request over %d (gap %s): median %s, p90 %s, max %s", n, gap, ms(med), ms(p90), ms(top))
	}
	clustered()
	embedded()
}

// TestClusterBenchThousand: 1,000 quick subagents (200 ms scripted
// model call) spawned through the gateway, with one and with two
// workers; from the first spawn to all final.
func TestClusterBenchThousand(t *testing.T) {
	benchOnly(t)
	n := envInt("AVA_BENCH_RUNS", 1000)
	order := []int{1, 2}
	if os.Getenv("AVA_BENCH_TWO_FIRST") != "" {
		order = []int{2, 1}
	}
	for _, workers := range order {
		cl := newCluster(t)
		gw := cl.start("gateway", "AVA_MAX_CONCURRENT_SUBAGENTS=50")
		for range workers {
			cl.start("worker", "AVA_MAX_CONCURRENT_SUBAGENTS=50")
		}
		if _, err := gw.c.Health(bg(t)); err != nil {
			t.Fatal(err)
		}
		st := cl.store()
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan int)
		var spawnErrs sync.Map
		for range 16 {
			wg.Go(func() {
				for i := range work {
					if _, _, err := gw.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: fmt.Sprintf("QUICK %d", i), Model: cl.model}); err != nil {
						spawnErrs.Store(i, err)
					}
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
		spawned := time.Since(start)
		spawnErrs.Range(func(k, v any) bool { t.Fatalf("spawn %v: %v", k, v); return false })
		var active, success, total int
		deadline := time.Now().Add(3 * time.Minute)
		for {
			err := st.Pool().QueryRow(context.Background(), `SELECT
				count(*) FILTER (WHERE status IN ('queued', 'pending', 'running')),
				count(*) FILTER (WHERE status = 'success'), count(*) FROM runs`).Scan(&active, &success, &total)
			if err != nil {
				t.Fatal(err)
			}
			if active == 0 && total >= n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d workers: %d of %d runs still active after 3 min", workers, active, total)
			}
			time.Sleep(20 * time.Millisecond)
		}
		wall := time.Since(start)
		owners := map[string]int{}
		rows, err := st.Pool().Query(context.Background(), `SELECT owner, count(*) FROM runs GROUP BY owner`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var o string
			var c int
			if err := rows.Scan(&o, &c); err != nil {
				t.Fatal(err)
			}
			owners[o] = c
		}
		rows.Close()
		// Snoozed jobs (River counts them in the job's metadata): a job
		// that finds the cluster full waits on its worker instead, so
		// this should stay 0.
		var snoozes int
		if err := st.Pool().QueryRow(context.Background(),
			`SELECT coalesce(sum((metadata->>'snoozes')::int), 0) FROM river_job`).Scan(&snoozes); err != nil {
			t.Logf("snoozes: %v", err)
		}
		if success != n {
			t.Errorf("%d workers: %d of %d runs succeeded", workers, success, n)
		}
		t.Logf("%d worker(s), %d subagents, limit 50: all spawned in %s, all final in %s (%.1f runs/s); %d snoozes (cluster full); runs per owner %v",
			workers, n, spawned.Round(time.Millisecond), wall.Round(time.Millisecond), float64(n)/wall.Seconds(), snoozes, owners)
	}
}

// startArgs starts a process of the cluster like start, with arguments
// for ava serve besides the role.
func (c *cluster) startArgs(role string, extra []string, args ...string) *daemon {
	c.t.Helper()
	c.procs++
	data := filepath.Join(c.root, fmt.Sprintf("data-%s-%d", role, c.procs))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + c.root,
		"AVA_MODEL=" + c.model, "AVA_CONFIRM=never", "AVA_DATABASE_URL=" + c.url, "AVA_MAX_CONCURRENT_SUBAGENTS=60",
		"AVA_MAX_QUEUED_SUBAGENTS=1000", "AVA_SPAWN_OVERFLOW=queue"}
	return startDaemon(c.t, append(env, extra...), append([]string{"--role", role}, args...)...)
}

// TestClusterBenchTakeover: from a worker's end (SIGKILL, or SIGTERM
// with --grace 1s) to each of its runs resumed on the other worker (its
// attempts at 1 in the database).
func TestClusterBenchTakeover(t *testing.T) {
	benchOnly(t)
	n := envInt("AVA_BENCH_TAKEOVER_RUNS", 20)
	cases := []struct {
		name   string
		env    []string
		args   []string
		signal syscall.Signal
		// phase is how long after the other worker's start the first
		// one is ended: the other finds the dead one's runs at its next
		// recovery sweep, which comes every AVA_RECOVER_EVERY from its
		// start.
		phase time.Duration
	}{
		{"SIGKILL, AVA_RECOVER_EVERY=1s", []string{"AVA_RECOVER_EVERY=1s"}, nil, syscall.SIGKILL, 0},
		{"SIGKILL, AVA_RECOVER_EVERY=1s, 0.5s into the sweep period", []string{"AVA_RECOVER_EVERY=1s"}, nil, syscall.SIGKILL, 500 * time.Millisecond},
		{"SIGKILL, default recovery (10s)", nil, nil, syscall.SIGKILL, 0},
		{"SIGKILL, default recovery (10s), 4s into the sweep period", nil, nil, syscall.SIGKILL, 4 * time.Second},
		{"SIGTERM --grace 1s, default recovery (10s)", nil, []string{"--grace", "1s"}, syscall.SIGTERM, 0},
	}
	for _, tc := range cases {
		cl := newCluster(t)
		gw := cl.startArgs("gateway", tc.env)
		a := cl.startArgs("worker", tc.env, tc.args...)
		first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
		jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "STEPS", n)
		waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" && sa.Iteration >= 1 })
		st := cl.store()
		cl.startArgs("worker", tc.env)
		time.Sleep(tc.phase)
		ended := time.Now()
		a.cmd.Process.Signal(tc.signal)
		exitedc := make(chan time.Duration, 1)
		go func() { <-a.done; exitedc <- time.Since(ended) }()
		resumed := map[string]time.Duration{}
		deadline := time.Now().Add(2 * time.Minute)
		for len(resumed) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d runs resumed after 2 min\n%s", tc.name, len(resumed), n, a.stderr)
			}
			for _, j := range jobs {
				if _, ok := resumed[j.id]; ok {
					continue
				}
				r, err := st.GetRun(context.Background(), j.id)
				if err != nil {
					t.Fatal(err)
				}
				if r.Attempts >= 1 {
					resumed[j.id] = time.Since(ended)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		var ds []time.Duration
		for _, d := range resumed {
			ds = append(ds, d)
		}
		med, _, top := quantiles(ds)
		waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
		exited := <-exitedc
		var bad []string
		for _, j := range jobs {
			r, err := st.GetRun(context.Background(), j.id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != lifecycle.Success || r.Attempts != 1 {
				bad = append(bad, fmt.Sprintf("%s %s attempts %d", j.id, r.Status, r.Attempts))
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s: runs not resumed once to success: %s", tc.name, strings.Join(bad, "; "))
		}
		code := a.cmd.ProcessState.ExitCode()
		t.Logf("%s: %d runs, worker exited after %s (code %d); resumed elsewhere (attempts=1): median %s, max %s",
			tc.name, n, exited.Round(time.Millisecond), code, ms(med), ms(top))
	}
}

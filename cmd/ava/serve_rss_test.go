package main_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/avaagent/ava/gateway/client"
)

// TestDaemonRSSFigures measures the daemon's resident memory idle and
// with 100 subagents running (blocked in a scripted model call). Run
// with AVA_BENCH=1 (docs/benchmarks.md).
func TestDaemonRSSFigures(t *testing.T) {
	if os.Getenv("AVA_BENCH") == "" {
		t.Skip("set AVA_BENCH=1 to measure")
	}
	env, model := daemonEnv(t)
	d := startDaemon(t, append(env, "AVA_MAX_CONCURRENT_SUBAGENTS=100"))
	if _, err := d.c.Health(bg(t)); err != nil {
		t.Fatal(err)
	}
	idle := rssKB(t, d.cmd.Process.Pid)
	ids := make([]string, 100)
	for i := range ids {
		sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "BLOCKTASK", Model: model})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = sa.ID
	}
	for _, id := range ids {
		recorded(t, d.c, id)
	}
	running := rssKB(t, d.cmd.Process.Pid)
	t.Logf("daemon RSS: idle %.1f MiB, with 100 subagents running %.1f MiB", float64(idle)/1024, float64(running)/1024)
	for _, id := range ids {
		if _, err := d.c.Stop(bg(t), "ava:subagent:"+id); err != nil {
			t.Fatal(err)
		}
		waitEnded(t, d.c, id)
	}
	finished := envInt("AVA_BENCH_FINISHED", 10_000)
	spawnAndFinish(t, d.c, model, finished)
	after := rssKB(t, d.cmd.Process.Pid)
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid))
	t.Logf("daemon RSS after %d finished subagents: %.1f MiB (%.2f× idle), %d open files", finished, float64(after)/1024,
		float64(after)/float64(idle), len(fds))
}

// spawnAndFinish runs n quick subagents on the daemon, 16 at a time, and
// returns once all have ended.
func spawnAndFinish(t *testing.T, c *client.Client, model string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for range work {
				sa, _, err := c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "quick", Model: model})
				if err != nil {
					t.Error(err)
					continue
				}
				waitEnded(t, c, sa.ID)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// waitEnded reads a subagent's stream until its SessionEnd.
func waitEnded(t *testing.T, c *client.Client, id string) {
	st, err := c.Stream(bg(t), "ava:subagent:"+id, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil || ev.Type == "SessionEnd" {
			return
		}
	}
}

// envInt reads a positive integer setting of a measurement.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// rssKB reads VmRSS of a process (Linux).
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

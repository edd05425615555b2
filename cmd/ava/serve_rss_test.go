package main_test

import (
	"fmt"
	"os"
	"strings"
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
		sa, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "BLOCKTASK", Model: model})
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

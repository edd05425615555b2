package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// TestMetricsRunningCountsNoQueuedRun: with two slots and five blocking
// spawns, ava_subagents_running is 2 (the slots) and
// ava_subagents_queued 3, not 5 running.
func TestMetricsRunningCountsNoQueuedRun(t *testing.T) {
	e := newEnv(t, envOptions{env: map[string]string{"AVA_MAX_CONCURRENT_SUBAGENTS": "2", "AVA_SPAWN_OVERFLOW": "queue"}})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	for range 5 {
		e.spawnBlocking(res.Session)
	}
	want := []string{"ava_subagents_running 2\n", "ava_subagents_queued 3\n"}
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, body = e.do("GET", "/metrics", "", nil)
		if strings.Contains(body, want[0]) && strings.Contains(body, want[1]) {
			return
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "ava_subagents_") {
			t.Log(line)
		}
	}
	t.Fatalf("metrics lack %q", want)
}

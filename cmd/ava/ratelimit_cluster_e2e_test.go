package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// TestClusterSharesRateLimit: a gateway and two workers on one
// database run 20 subagents of two model calls each against a server
// that allows 10 requests per 2 s and sends no headers, configured so
// in every process's config.yaml (rate_limits:). The workers pace
// through one bucket in PostgreSQL, so together they keep to the limit:
// every run succeeds and at most a handful of requests are refused
// (each pacing alone, two workers would send twice the rate).
func TestClusterSharesRateLimit(t *testing.T) {
	fake := llmfake.NewOpenAI(t)
	fake.Respond = func(req llmfake.Request) llmfake.Turn {
		if strings.Contains(string(req.Raw), `"role":"tool"`) {
			return llmfake.Turn{Text: `{"summary":"ok","output":{"a":1},"confidence":0.9}`, Usage: llm.Usage{InputTokens: 50, OutputTokens: 10}}
		}
		return llmfake.Turn{ToolCalls: []llmfake.ToolCall{{Name: "read_file", Args: `{"path":"notes.txt"}`}}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 8}}
	}
	fake.SetRateLimit(llmfake.RateLimit{N: 10, Window: 2 * time.Second, NoHeaders: true})
	cl := newCluster(t)
	// The data roots start processes 1 (gateway), 2 and 3 (workers).
	for _, name := range []string{"data-gateway-1", "data-worker-2", "data-worker-3"} {
		dir := filepath.Join(cl.root, name)
		must(t, os.MkdirAll(dir, 0o700))
		must(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("rate_limits:\n  llama3.2: {rpm: 10, window: 2s}\n"), 0o600))
	}
	extra := []string{"OPENAI_BASE_URL=" + fake.URL + "/v1"}
	gw := cl.start("gateway", extra...)
	cl.start("worker", extra...)
	cl.start("worker", extra...)
	var (
		mu   sync.Mutex
		jobs []job
		wg   sync.WaitGroup
	)
	start := time.Now()
	for i := range 20 {
		wg.Go(func() {
			sa, _, err := gw.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: fmt.Sprintf("look %d", i), Model: "openai/llama3.2"})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			jobs = append(jobs, job{id: sa.ID})
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	wall := time.Since(start)
	for _, j := range jobs {
		sa, err := gw.c.Subagent(bg(t), j.id)
		if err != nil || sa.Status != string(lifecycle.Success) {
			t.Errorf("%s: %+v %v", j.id, sa, err)
		}
	}
	refused := fake.Refused()
	t.Logf("two workers, 40 model calls at 10 per 2 s through PostgreSQL: %d refused (429), %s wall (floor 6 s)", refused, wall.Round(10*time.Millisecond))
	if refused > 5 {
		t.Errorf("%d requests refused with 429, want at most 5", refused)
	}
}

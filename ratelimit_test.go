package ava_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// twoCalls answers a subagent's first model call with a tool call and
// its second, which carries the tool's result, with the final answer.
func twoCalls(req llmfake.Request) llmfake.Turn {
	if strings.Contains(string(req.Raw), `"tool_result"`) || strings.Contains(string(req.Raw), `"role":"tool"`) {
		return llmfake.Turn{Text: `{"summary":"ok","output":{"a":1},"confidence":0.9}`, Usage: llm.Usage{InputTokens: 50, OutputTokens: 10}}
	}
	return llmfake.Turn{ToolCalls: []llmfake.ToolCall{{Name: "read_file", Args: `{"path":"notes.txt"}`}}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 8}}
}

// spawnTwenty runs 20 subagents of two model calls each on model and
// returns how long they took; every one must succeed.
func spawnTwenty(t *testing.T, rt *ava.Runtime, model string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	var configs []ava.SubagentConfig
	for i := range 20 {
		configs = append(configs, ava.SubagentConfig{Role: "researcher", Task: fmt.Sprintf("look %d", i), Model: model, ModelBy: llm.NamedByOperator})
	}
	start := time.Now()
	sp, err := rt.SpawnGroup(ctx, "", ava.GroupRequest{Mode: "parallel", Configs: configs}, "", "")
	if err != nil || sp.Group == nil {
		t.Fatalf("SpawnGroup: %+v %v", sp, err)
	}
	waiting := make(chan string, 1)
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() { watchActivity(ctx, rt, waiting, stop) })
	rs, err := sp.Group.Wait(ctx)
	wall := time.Since(start)
	close(stop)
	watch.Wait()
	select {
	case a := <-waiting:
		t.Logf("seen as a run's activity: %q", a)
	default:
		t.Error(`no run showed "waiting for rate limit" as its activity`)
	}
	if err != nil || len(rs) != 20 {
		t.Fatalf("group: %d results, %v", len(rs), err)
	}
	for _, r := range rs {
		if r.Status != "success" {
			t.Errorf("%s: %s (%s)", r.SubagentID, r.Status, r.Summary)
		}
	}
	return wall
}

// watchActivity lists the runs every 20 ms until stop and sends the
// first rate-limit wait it sees as a run's activity (what ava ps and
// the panel show).
func watchActivity(ctx context.Context, rt *ava.Runtime, seen chan<- string, stop <-chan struct{}) {
	for {
		list, _ := rt.Subagents(ctx, ava.SubagentFilter{})
		for _, sa := range list {
			if strings.HasPrefix(sa.Activity, agent.RateLimitActivity) {
				seen <- sa.Activity
				return
			}
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Twenty subagents of two model calls each against a key allowed 30
// requests per 6 s (the rate of 30 a minute, ten times faster, so the
// test is quick; AVA_BENCH_RATE_WINDOW=1m runs it at 30 a minute), that
// says so in Anthropic's headers: every one succeeds, and the shared
// limiter keeps the refusals to a handful (each subagent retrying its
// own 429s draws a storm of them).
func TestSharedRateLimitPacesTwentySubagents(t *testing.T) {
	window := 6 * time.Second
	if w, err := time.ParseDuration(os.Getenv("AVA_BENCH_RATE_WINDOW")); err == nil && w > 0 {
		window = w
	}
	fake := llmfake.NewAnthropic(t)
	fake.Respond = twoCalls
	fake.SetRateLimit(llmfake.RateLimit{N: 30, Window: window})
	rt := openTest(t, "turns:\n  - text: done\n", func(c *config.Config) {
		c.Anthropic = config.Provider{APIKey: "sk-ant-test", BaseURL: fake.URL}
		c.MaxConcurrentSubagents = 20
	})
	wall := spawnTwenty(t, rt, "anthropic/claude-haiku-4-5")
	refused := fake.Refused()
	// The floor: 30 go at once, the other 10 at 30 per window.
	t.Logf("40 model calls at 30 per %s: %d refused (429), %s wall (floor %s)", window, refused, wall.Round(10*time.Millisecond), window/3)
	if refused > 3 {
		t.Errorf("%d requests refused with 429, want at most 3", refused)
	}
	if n := len(fake.Requests()); n != 40 {
		t.Errorf("%d requests answered, want 40", n)
	}
}

// Twenty subagents of two model calls each, their first calls all sent
// at once (the process knows nothing of the key's limits yet), against
// a key allowed 30 requests a minute as a token bucket that starts full,
// said in Anthropic's headers, each answer's first byte 200 ms after its
// request: the ten calls over the limit are paced from what the answers
// said (less the requests still out when each was admitted), so the
// refusals stay at five at most. It takes about 20 s (ten calls at one
// every 2 s), so -short skips it.
func TestTwentySubagentsUnderThirtyAMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s at the real rate")
	}
	fake := llmfake.NewAnthropic(t)
	fake.Respond = func(req llmfake.Request) llmfake.Turn {
		turn := twoCalls(req)
		turn.Delay = 200 * time.Millisecond
		return turn
	}
	fake.SetRateLimit(llmfake.RateLimit{N: 30, Window: time.Minute})
	rt := openTest(t, "turns:\n  - text: done\n", func(c *config.Config) {
		c.Anthropic = config.Provider{APIKey: "sk-ant-test", BaseURL: fake.URL}
		c.MaxConcurrentSubagents = 20
	})
	wall := spawnTwenty(t, rt, "anthropic/claude-haiku-4-5")
	refused := fake.Refused()
	t.Logf("40 model calls at 30 a minute: %d refused (429), %s wall (floor 20 s)", refused, wall.Round(10*time.Millisecond))
	if refused > 5 {
		t.Errorf("%d requests refused with 429, want at most 5", refused)
	}
	if n := len(fake.Requests()); n != 40 {
		t.Errorf("%d requests answered, want 40", n)
	}
}

// A server that sends no rate-limit headers (a server of one's own) is
// paced by config.yaml's rate_limits: only.
func TestConfiguredRateLimitPacesAServerWithoutHeaders(t *testing.T) {
	fake := llmfake.NewOpenAI(t)
	fake.Respond = twoCalls
	fake.SetRateLimit(llmfake.RateLimit{N: 10, Window: 2 * time.Second, NoHeaders: true})
	rt := openTest(t, "turns:\n  - text: done\n", func(c *config.Config) {
		c.OpenAI = config.Provider{BaseURL: fake.URL + "/v1"}
		c.MaxConcurrentSubagents = 20
		c.RateLimits = llm.RateLimits{"llama3.2": {RPM: 10, Window: 2 * time.Second}}
	})
	wall := spawnTwenty(t, rt, "openai/llama3.2")
	refused := fake.Refused()
	t.Logf("40 model calls at 10 per 2 s, no headers, rate_limits: rpm 10 per 2 s: %d refused, %s wall (floor 6 s)", refused, wall.Round(10*time.Millisecond))
	if refused > 3 {
		t.Errorf("%d requests refused with 429, want at most 3", refused)
	}
}

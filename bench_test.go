package ava_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// benchRuntime is a runtime whose subagents wait for ever on their model
// (a scripted delay), so a spawn's cost is the spawn alone, with room
// for every spawn of the benchmark.
func benchRuntime(b *testing.B) (*ava.Runtime, string) {
	b.Helper()
	cfg := exampleConfig("turns:\n  - text: never\n    delay: 1h\n")
	cfg.MaxConcurrentSubagents = 1_000_000
	rt, err := ava.Open(context.Background(), ava.Options{Config: cfg, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	key, err := rt.NewSession(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	return rt, key
}

// BenchmarkSpawnThroughCore is a spawn as the API, MCP and the command
// line make it: Runtime.Spawn (the parent resolved, the spawn recorded,
// the run's view read back).
func BenchmarkSpawnThroughCore(b *testing.B) {
	rt, key := benchRuntime(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := rt.Spawn(ctx, ava.SpawnRequest{Parent: key, Config: ava.SubagentConfig{Role: "researcher", Task: "t"},
			Background: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpawnBeneathCore is the same spawn made on the subagent
// manager directly: the difference is what the core adds.
func BenchmarkSpawnBeneathCore(b *testing.B) {
	rt, key := benchRuntime(b)
	ctx := context.Background()
	m := rt.Instance().Subagent
	caller := tool.Caller{AgentID: event.OrchestratorID, SessionKey: key}
	for b.Loop() {
		if _, _, err := m.SpawnOrPropose(ctx, subagent.Request{Config: ava.SubagentConfig{Role: "researcher", Task: "t"},
			Parent: caller, Background: true}, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenToFirstRequest is what `ava run` does in its process on
// an existing data root up to its first model request: the runtime
// opened, the message sent to a new session, the orchestrator's request
// at the provider (an OpenAI-compatible fake on loopback); the turn is
// then waited for and the runtime closed, outside the figure. The
// process's own start (exec, package initialisation) is not in it:
// BenchmarkStartToFirstRequest in cmd/ava has the whole.
func BenchmarkOpenToFirstRequest(b *testing.B) {
	fake := llmfake.NewOpenAI(b)
	arrived := make(chan time.Time, 16)
	fake.Respond = func(llmfake.Request) llmfake.Turn {
		arrived <- time.Now()
		return llmfake.Turn{Text: "hi", Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}
	}
	cfg := exampleConfig("turns:\n  - text: unused\n")
	cfg.OpenAI = config.Provider{BaseURL: fake.URL + "/v1"}
	cfg.Model = "openai/m"
	ctx := context.Background()
	turn := func(i int) time.Duration {
		start := time.Now()
		rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		t, sub, err := rt.Chat(ctx, fmt.Sprintf("ava:cli:bench%04d", i), "hello", ava.SendOptions{Model: "openai/m"})
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		at := <-arrived
		if res, err := t.Wait(ctx); err != nil || res.Status != "success" {
			b.Fatalf("turn: %+v %v", res, err)
		}
		return at.Sub(start)
	}
	turn(0) // the data root exists from here on
	var took []time.Duration
	i := 0
	for b.Loop() {
		i++
		took = append(took, turn(i))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
}

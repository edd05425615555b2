package ava_test

import (
	"context"
	"testing"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/event"
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

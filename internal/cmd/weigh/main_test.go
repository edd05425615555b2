package main

import (
	"encoding/json"
	"testing"

	"github.com/avaagent/ava/llm/scripted"
)

// TestFanoutScript: the script weigh runs is one the offline model
// accepts, and its orchestrator delegates n tasks in parallel.
func TestFanoutScript(t *testing.T) {
	s, err := scripted.Parse("fanout", []byte(fanoutScript(subagents)))
	if err != nil {
		t.Fatal(err)
	}
	var spawn *scripted.ToolCall
	for _, c := range s.Conversations {
		for _, r := range c.Replies {
			for i := range r.ToolCalls {
				spawn = &r.ToolCalls[i]
			}
		}
	}
	if spawn == nil || spawn.Name != "spawn_subagents" {
		t.Fatalf("no spawn_subagents call: %+v", s)
	}
	b, err := json.Marshal(spawn.Args)
	if err != nil {
		t.Fatal(err)
	}
	var args struct {
		Mode  string           `json:"mode"`
		Tasks []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal(b, &args); err != nil {
		t.Fatal(err)
	}
	if args.Mode != "parallel" || len(args.Tasks) != subagents {
		t.Fatalf("args %s", b)
	}
}

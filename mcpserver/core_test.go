package mcpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/mcpserver"
)

// schemaProps are the properties of an object schema, and of its array
// property's items when items names one (spawn_subagents' tasks).
func schemaProps(t *testing.T, schema any, items string) map[string]any {
	t.Helper()
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]struct {
			Items struct {
				Properties map[string]any `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("schema %s: %v", b, err)
	}
	out := map[string]any{}
	if items != "" {
		for k, v := range s.Properties[items].Items.Properties {
			out[k] = v
		}
		return out
	}
	for k := range s.Properties {
		out[k] = true
	}
	return out
}

// TestSpawnToolsShareTheOrchestratorsSchema: MCP's spawn_subagent and
// spawn_subagents take every argument the orchestrator's spawn tools take
// (one definition: extended_thinking, context_mode and rationale were
// missing over MCP).
func TestSpawnToolsShareTheOrchestratorsSchema(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := t.TempDir()
	cfg, err := config.Load(func(k string) string { return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root}[k] })
	if err != nil {
		t.Fatal(err)
	}
	in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler), app.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	orch := map[string]json.RawMessage{}
	for _, tl := range in.Subagent.Tools() {
		orch[tl.Name()] = tl.Schema()
	}
	tools, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mcpSchemas := map[string]any{}
	for _, tl := range tools.Tools {
		mcpSchemas[tl.Name] = tl.InputSchema
	}
	for _, c := range []struct{ tool, items string }{{"spawn_subagent", ""}, {"spawn_subagents", ""}, {"spawn_subagents", "tasks"}} {
		want := schemaProps(t, orch[c.tool], c.items)
		got := schemaProps(t, mcpSchemas[c.tool], c.items)
		if len(want) == 0 {
			t.Fatalf("%s: the orchestrator's schema has no properties", c.tool)
		}
		for name := range want {
			if _, ok := got[name]; !ok {
				t.Errorf("MCP's %s %s lacks the orchestrator's argument %q", c.tool, c.items, name)
			}
		}
	}
	for _, name := range []string{"extended_thinking", "context_mode", "rationale"} {
		if _, ok := schemaProps(t, mcpSchemas["spawn_subagent"], "")[name]; !ok {
			t.Errorf("MCP's spawn_subagent lacks %s", name)
		}
	}
}

// TestSpawnRefusesContextFork: an MCP call has no conversation to fork;
// the spawn says so and starts nothing (it used to start fresh without
// a word).
func TestSpawnRefusesContextFork(t *testing.T) {
	e := newEnv(t, envOptions{})
	res := e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK fork", "model": "scripted/sonnet", "context_mode": "fork"})
	if !res.IsError || !strings.Contains(text(res), "context_mode fork") || !strings.Contains(text(res), "correct the arguments") {
		t.Fatalf("fork over MCP: %s", text(res))
	}
	res = e.mustCall("spawn_subagents", map[string]any{"mode": "parallel", "tasks": []map[string]any{
		{"role": "researcher", "task": "QUICK a", "model": "scripted/sonnet", "context_mode": "fork"}}})
	if !res.IsError || !strings.Contains(text(res), "task 1: context_mode fork") {
		t.Fatalf("fork in a group over MCP: %s", text(res))
	}
	if n := len(e.all()); n != 0 {
		t.Fatalf("%d subagents started", n)
	}
	// The arguments that are new over MCP reach the spawn.
	res = e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK thought", "model": "scripted/sonnet",
		"extended_thinking": false, "context_mode": "fresh", "rationale": "to test"})
	if res.IsError {
		t.Fatalf("spawn with the orchestrator's arguments: %s", text(res))
	}
}

// TestSubagentStatusShowsTheRuntimesFigures: subagent_status and
// list_subagents show the figures of ava.Subagent (what `ava ps` and the
// API show), also after a follow-up.
func TestSubagentStatusShowsTheRuntimesFigures(t *testing.T) {
	e := newEnv(t, envOptions{})
	var first mcpserver.SpawnResult
	structured(t, e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK figures", "model": "scripted/sonnet"}), &first)
	res := e.mustCall("send_subagent", map[string]any{"subagent_id": first.SubagentID, "message": "and then?"})
	if res.IsError {
		t.Fatalf("follow-up: %s", text(res))
	}
	res = e.mustCall("subagent_status", map[string]any{"subagent_id": first.SubagentID[:5]})
	if res.IsError {
		t.Fatalf("subagent_status: %s", text(res))
	}
	if err := e.outputSchema("subagent_status").Validate(res.StructuredContent); err != nil {
		t.Fatalf("structured content does not match the output schema: %v", err)
	}
	var got mcpserver.StatusResult
	structured(t, res, &got)
	want, err := e.rt.Subagent(context.Background(), first.SubagentID)
	if err != nil {
		t.Fatal(err)
	}
	if want.Tokens == 0 || want.Iterations == 0 {
		t.Fatalf("the runtime's figures after a follow-up: %+v", want.Figures)
	}
	g, w := got.Subagent, want
	if g.ID != w.ID || g.Status != w.Status || g.Tokens != w.Tokens || g.CostCents != w.CostCents || g.Iterations != w.Iterations {
		t.Errorf("subagent_status: %s %s %d tokens %.3f¢ %d iterations; the runtime: %s %s %d tokens %.3f¢ %d iterations",
			g.ID, g.Status, g.Tokens, g.CostCents, g.Iterations, w.ID, w.Status, w.Tokens, w.CostCents, w.Iterations)
	}
	if d := time.Duration(got.ElapsedSeconds*float64(time.Second)) - w.Elapsed; d > 10*time.Millisecond || d < -10*time.Millisecond {
		t.Errorf("elapsed %.3fs, the runtime's %s", got.ElapsedSeconds, w.Elapsed)
	}
	if got.Line != w.String() || !strings.Contains(text(res), `"tokens": `+itoa(w.Tokens)) {
		t.Errorf("status text: %s; want the line %q", text(res), w.String())
	}
	if l := text(e.mustCall("list_subagents", map[string]any{"all": true})); !strings.Contains(l, w.String()) {
		t.Errorf("list_subagents: %q, want the line %q", l, w.String())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

var pendingID = regexp.MustCompile(`P-[0-9a-f]{6}`)

// TestConfirmationTakesAChangeInWords: the confirmation form offers a
// change (the proposal's text does), and the server applies it as the
// chat does; a change it cannot read is asked again, never taken as a
// yes.
func TestConfirmationTakesAChangeInWords(t *testing.T) {
	for _, protocol := range []string{"", "2025-06-18"} {
		t.Run("protocol "+cmpOr(protocol, "latest"), func(t *testing.T) {
			var (
				id       string
				messages []string
			)
			e := newEnv(t, envOptions{confirm: "always", protocol: protocol, elicit: func(r *mcp.ElicitRequest) *mcp.ElicitResult {
				messages = append(messages, r.Params.Message)
				id = pendingID.FindString(r.Params.Message)
				props, _ := r.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any)
				if _, ok := props["change"]; !ok {
					return &mcp.ElicitResult{Action: "decline"}
				}
				change := "make it purple"
				if len(messages) > 1 {
					change = "10 iterations"
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"start": true, "change": change}}
			}})
			res := e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK changed", "model": "scripted/sonnet"})
			var out mcpserver.SpawnResult
			structured(t, res, &out)
			if out.Status != lifecycle.Success || len(messages) != 2 {
				t.Fatalf("changed spawn: %+v, asked %d times: %s", out, len(messages), text(res))
			}
			if !strings.Contains(messages[1], `"make it purple" could not be read`) {
				t.Errorf("second question: %s", messages[1])
			}
			p, err := e.rt.Proposal(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != "confirmed" || len(p.Spawn.Configs) != 1 || p.Spawn.Configs[0].MaxIterations != 10 {
				t.Errorf("proposal %s after the change: %s %+v", id, p.Status, p.Spawn.Configs)
			}
			if all := e.all(); len(all) != 1 || all[0].ID != out.SubagentID {
				t.Errorf("%d subagents, want only %s", len(all), out.SubagentID)
			}
		})
	}
}

// TestErrorsSayWhatToDo: a failed call is an error result that says what
// failed and what to do next, by the error's kind (ava.KindOf).
func TestErrorsSayWhatToDo(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, c := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"subagent_status", map[string]any{"subagent_id": "S-nope00"}, []string{"subagent_status:", "list_subagents shows"}},
		{"cancel_subagent", map[string]any{"subagent_id": "S-nope00"}, []string{"cancel_subagent:", "list_subagents shows"}},
		{"send_subagent", map[string]any{"subagent_id": "S-nope00", "message": "hi"}, []string{"send_subagent:", "list_subagents shows"}},
		{"spawn_subagent", map[string]any{"role": "no_such_role", "task": "QUICK x"}, []string{"spawn_subagent:", "no_such_role", "correct the arguments"}},
	} {
		res := e.mustCall(c.tool, c.args)
		for _, w := range c.want {
			if !res.IsError || !strings.Contains(text(res), w) {
				t.Errorf("%s %v: %s (error %v), want %q", c.tool, c.args, text(res), res.IsError, w)
			}
		}
	}
}

package subagent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// Whatever a role's MCP servers offer, a subagent gets no tool named
// like one it may not have, nor one that takes a built-in's name; a
// server that failed is named to the model and the other tools stay.
func TestMCPToolsFollowTheHierarchyRule(t *testing.T) {
	var asked []string
	h := newHarness(t, `turns: [{text: "done"}]`, func(o *subagent.Options) {
		o.Roles = map[string]role.Role{"mcp": {Name: "mcp", Tools: []string{"read_file"}, Model: "haiku",
			Limits: role.DefaultLimits, MCPServers: []mcpclient.Spec{{Name: "srv"}, {Name: "down"}}}}
		o.MCPTools = func(_ context.Context, r role.Role) ([]tool.Tool, error) {
			asked = r.MCPServerNames()
			return []tool.Tool{named("srv__lookup"), named("spawn_subagent"), named("memory_write"), named("read_file")},
				errors.New("MCP server down failed to start")
		}
	})
	wait(t, h.spawn(t, subagent.Config{Role: "mcp", Task: "look"}))
	if !slices.Equal(asked, []string{"srv", "down"}) {
		t.Fatalf("asked for %v", asked)
	}
	reqs := h.model.requests()
	if len(reqs) == 0 {
		t.Fatal("no model call")
	}
	var got []string
	for _, tl := range reqs[0].Tools {
		got = append(got, tl.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"read_file", "srv__lookup"}) {
		t.Fatalf("tools %v", got)
	}
	if !strings.Contains(reqs[0].System, "MCP server down failed to start") {
		t.Errorf("the system prompt does not name the failed server:\n%s", reqs[0].System)
	}
}

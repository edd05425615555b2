package subagent_test

import (
	"strings"
	"testing"

	"github.com/avaagent/ava/role"
)

// A role added while a session is open (a reload, SetRoles) is offered
// in spawn_subagent's description at the next model request: the tools
// were built once, with the roles of that moment, before.
func TestSpawnToolOffersRolesAddedByAReload(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: unused\n", nil)
	var spawn interface{ Description() string }
	for _, tl := range h.m.Tools() {
		if tl.Name() == "spawn_subagent" {
			spawn = tl
		}
	}
	if spawn == nil || strings.Contains(spawn.Description(), "pricing_analyst") {
		t.Fatal("no spawn_subagent, or it already names the new role")
	}
	roles := h.m.Roles()
	next := make(map[string]role.Role, len(roles)+1)
	for k, v := range roles {
		next[k] = v
	}
	r := roles["researcher"]
	r.Name, r.Description = "pricing_analyst", "prices things"
	next[r.Name] = r
	h.m.SetRoles(next)
	if !strings.Contains(spawn.Description(), "pricing_analyst") {
		t.Fatalf("after the reload the description still lacks the new role: %s", spawn.Description())
	}
}

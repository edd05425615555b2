package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// GET /api/mcp/servers lists the roles' MCP servers and their state in
// the daemon, behind the token like every route.
func TestMCPServersRoute(t *testing.T) {
	e := newEnv(t, envOptions{token: "tok", roles: map[string]string{
		"lost.md": "---\nname: lost\ndescription: A role with a missing server.\ntools: [read_file]\nmcp_servers:\n  - {name: nowhere, command: /nonexistent/mcp-server}\n---\n",
	}})
	if code, _ := e.do(http.MethodGet, "/api/mcp/servers", "", map[string]string{"Authorization": ""}); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", code)
	}
	list, err := e.c.MCPServers(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "nowhere" || list[0].Kind != "stdio" || list[0].State != "not started" ||
		list[0].Target != "/nonexistent/mcp-server" || len(list[0].Roles) != 1 || list[0].Roles[0] != "lost" {
		t.Fatalf("servers: %+v", list)
	}
	// How it runs: in the sandbox (the machine has one), or, where the
	// test machine has none, refusing to start; never silently open.
	if c := list[0].Confinement; !strings.HasPrefix(c, "sandboxed") && !strings.Contains(c, "UNAVAILABLE") && !strings.HasPrefix(c, "UNSANDBOXED (AVA_SANDBOX=off)") {
		t.Errorf("confinement %q", c)
	}
}

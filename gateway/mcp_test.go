package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds the token to every request of the MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func TestMCPOverHTTPNeedsTheToken(t *testing.T) {
	e := newEnv(t, envOptions{token: "sekrit"})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
	hdr := map[string]string{"Accept": "application/json, text/event-stream", "Authorization": ""}
	code, body := e.do("POST", "/mcp", init, hdr)
	wantError(t, code, body, http.StatusUnauthorized, "token")
	hdr["Authorization"] = "Bearer wrong"
	code, body = e.do("POST", "/mcp", init, hdr)
	wantError(t, code, body, http.StatusUnauthorized, "token")
	hdr["Authorization"], hdr["Origin"] = "Bearer sekrit", "https://evil.example"
	code, body = e.do("POST", "/mcp", init, hdr)
	wantError(t, code, body, http.StatusForbidden, "origin")

	// With the token, a real MCP client spawns a subagent and waits.
	tr := &mcp.StreamableClientTransport{Endpoint: e.ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: "sekrit", next: http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "v0"}, nil).Connect(ctx(t), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "spawn_subagent",
		Arguments: map[string]any{"role": "researcher", "task": "a specialized research subagent task", "model": spawnModel}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || sc["status"] != "success" || sc["summary"] != "subagent answer" {
		t.Fatalf("spawn over /mcp: %+v", res.StructuredContent)
	}
	id, _ := sc["subagent_id"].(string)
	list, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "list_subagents", Arguments: map[string]any{"all": true}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := list.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, id) {
		t.Errorf("list_subagents: %s", txt)
	}
	if err := cs.Close(); err != nil { // DELETE /mcp: no body, no content type
		t.Errorf("close the MCP session: %v", err)
	}

	// Each MCP session is its own parent session.
	cs2, err := mcp.NewClient(&mcp.Implementation{Name: "gateway-test-2", Version: "v0"}, nil).Connect(ctx(t), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	res, err = cs2.CallTool(ctx(t), &mcp.CallToolParams{Name: "spawn_subagent",
		Arguments: map[string]any{"role": "researcher", "task": "a specialized research subagent task", "model": spawnModel, "background": true}})
	if err != nil {
		t.Fatal(err)
	}
	id2, _ := res.StructuredContent.(map[string]any)["subagent_id"].(string)
	first, err := e.in.Subagent.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.in.Subagent.Get(id2)
	if err != nil {
		t.Fatal(err)
	}
	if p1, p2 := first.Parent(), second.Parent(); !strings.HasPrefix(p1, "ava:mcp:") || !strings.HasPrefix(p2, "ava:mcp:") || p1 == p2 {
		t.Errorf("parent sessions %q and %q: want one ava:mcp:<id> per MCP session", p1, p2)
	}
}

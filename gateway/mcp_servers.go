package gateway

import (
	"net/http"

	"github.com/avaagent/ava/gateway/client"
)

// mcpServers answers GET /api/mcp/servers: the MCP servers roles use
// (config.yaml's and the roles' own) and their state in the daemon,
// which starts each one when a subagent first uses it.
func (s *Server) mcpServers(w http.ResponseWriter, _ *http.Request) {
	list := s.rt.MCPServers()
	out := client.MCPServerList{Servers: make([]client.MCPServer, 0, len(list))}
	for _, m := range list {
		out.Servers = append(out.Servers, client.MCPServer{Name: m.Name, Kind: m.Kind, Target: m.Target, State: string(m.State),
			PID: m.PID, Tools: m.Tools, Withheld: m.Withheld, Starts: m.Starts, Error: m.Err, Roles: m.Roles, Confinement: m.Confinement})
	}
	writeJSON(w, http.StatusOK, out)
}

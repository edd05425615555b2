package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava"
)

// RoleURI is the resource URI of a role.
func RoleURI(name string) string { return "ava://roles/" + name }

// addRoles exposes each role as a resource, so that a client can
// discover the roles spawn_subagent takes.
func (s *Server) addRoles() {
	for _, r := range s.rt.Roles() {
		text := roleText(r)
		s.mcp.AddResource(&mcp.Resource{URI: RoleURI(r.Name), Name: r.Name, Title: "Ava role " + r.Name,
			Description: r.Description, MIMEType: "text/markdown", Size: int64(len(text))},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: text}}}, nil
			})
	}
}

// roleText is a role as Markdown: description, model, tools, limits,
// instructions.
func roleText(r ava.Role) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", r.Name, r.FileText(r.Description))
	fmt.Fprintf(&b, "- model: %s\n", r.Model)
	fmt.Fprintf(&b, "- tools: %s\n", strings.Join(r.Tools, ", "))
	if len(r.MCPServers) > 0 {
		fmt.Fprintf(&b, "- MCP servers: %s (their tools are named <server>__<tool>)\n", strings.Join(r.MCPServerNames(), ", "))
	}
	l := r.Limits
	fmt.Fprintf(&b, "- limits: %s, %.0f¢, %d tokens, %d iterations\n", l.Timeout, l.MaxCostCents, l.MaxTokens, l.MaxIterations)
	if r.ExtendedThinking {
		b.WriteString("- extended thinking\n")
	}
	fmt.Fprintf(&b, "- source: %s\n", r.Source)
	if r.Untrusted {
		fmt.Fprintf(&b, "- UNTRUSTED (%s): limited; withheld: %s\n", r.UntrustedWhy, strings.Join(r.Withheld, "; "))
	}
	if r.Prompt != "" {
		fmt.Fprintf(&b, "\n## Instructions\n\n%s\n", r.FileText(strings.TrimSpace(r.Prompt)))
	}
	return b.String()
}

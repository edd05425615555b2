package subagent

import (
	"context"
	"fmt"
	"strings"

	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/tool"
)

// turnTools are the tools of one turn: the role's built-in tools plus,
// when it has MCP servers, their tools (Options.MCPTools starts the
// servers on first use). A server that cannot give its tools is left
// out and named in the returned error; the other tools still work.
// Whatever the servers offer, a subagent never gets a tool named like
// one it may not have (WithheldReason) or like one it already has.
func (h *Handle) turnTools(ctx context.Context) (*tool.Registry, error) {
	m := h.m
	if m.opt.MCPTools == nil || len(h.role.MCPServers) == 0 {
		return h.tools, nil
	}
	extra, err := m.opt.MCPTools(ctx, h.role)
	if err != nil {
		m.log.Warn("MCP servers unavailable; the subagent runs without their tools", "id", h.id, "role", h.role.Name, "err", err)
		err = fmt.Errorf("some MCP servers of role %s are unavailable: %w", h.role.Name, err)
	}
	var keep []tool.Tool
	for _, t := range extra {
		if why := role.WithheldReason(t.Name()); why != "" {
			m.log.Warn("MCP tool withheld", "id", h.id, "tool", t.Name(), "why", why)
			continue
		}
		if _, dup := h.tools.Get(t.Name()); dup {
			m.log.Warn("MCP tool withheld: its name is taken", "id", h.id, "tool", t.Name())
			continue
		}
		keep = append(keep, t)
	}
	reg, rerr := h.tools.With(keep...)
	if rerr != nil {
		m.log.Warn("MCP tools left out", "id", h.id, "err", rerr)
		return h.tools, fmt.Errorf("MCP tools of role %s: %w", h.role.Name, rerr)
	}
	return reg, err
}

// unavailableNote tells the model that some of its tools are missing.
func unavailableNote(err error) string {
	if err == nil {
		return ""
	}
	return "\n## Unavailable tools\nSome MCP servers of your role could not be started, so their tools are missing: " +
		tool.EscapeUntrusted(strings.ReplaceAll(err.Error(), "\n", "; ")) + "\nWork with the tools you have.\n"
}

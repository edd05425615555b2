// Package mcpclient is Ava's side as a Model Context Protocol client: a
// pool of configured MCP servers (a command Ava starts and talks to over
// stdio, or a streamable HTTP URL), each started on first use, shared by
// every subagent that uses it, started again after it dies and stopped
// when idle and at Close; and their tools adapted to tool.Tool under the
// names <server>__<tool>, with the server's input schemas.
//
// What a server says (tool descriptions, results) is untrusted text: the
// agent loop hands every tool result to the model in an <untrusted>
// block, and descriptions are marked as coming from the server.
//
// What a server is (its definition in config.yaml or a role, and its
// validation) is package mcpspec's; the pool takes those definitions.
package mcpclient

import "github.com/avaagent/ava/mcpspec"

// Spec is one MCP server's definition: the type of package mcpspec,
// named here for the pool's callers.
type Spec = mcpspec.Spec

// Specs is a list of definitions as YAML gives it (mcpspec.Specs).
type Specs = mcpspec.Specs

// CheckName says what is wrong with a server name, or nil
// (mcpspec.CheckName).
func CheckName(name string) error { return mcpspec.CheckName(name) }

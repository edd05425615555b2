package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/tool"
)

// StatusResult is subagent_status's structured result: the subagent as
// every surface shows it (ava.Subagent: the figures of `ava ps` and GET
// /api/subagents/{id}), its durations in seconds, and its line.
type StatusResult struct {
	Subagent ava.Subagent `json:"subagent"`
	// ElapsedSeconds is its active time (Figures.Elapsed); WallSeconds
	// the time from its first start to its last end (Figures.Wall).
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	WallSeconds    float64 `json:"wall_seconds"`
	// Line is the status in one line.
	Line string `json:"line"`
}

// addStatusTools adds subagent_status, list_subagents and
// cancel_subagent, each a call of the runtime.
func (s *Server) addStatusTools() error {
	out, err := schemaFor[StatusResult]()
	if err != nil {
		return err
	}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "subagent_status", OutputSchema: out,
		Description: "Show a subagent's status (iteration, tokens, cost, active and wall time, current activity, last tool call) or its result if it finished: the same figures as `ava ps` and the API."}, s.subagentStatus)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_subagents",
		Description: "List the subagents this MCP session started: running and queued ones (with their place in the queue), or with all=true also the finished ones."}, s.listSubagents)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cancel_subagent",
		Description: "Stop a running or queued subagent. Its model call and tool processes are stopped and its result is discarded; a queued one leaves the queue without starting."}, s.cancelSubagent)
	return nil
}

// subagentStatus is subagent_status: the runtime's view of one run.
func (s *Server) subagentStatus(ctx context.Context, _ *mcp.CallToolRequest, a ava.SubagentIDArgs) (*mcp.CallToolResult, StatusResult, error) {
	sa, err := s.rt.Subagent(ctx, a.SubagentID)
	if err != nil {
		return nil, StatusResult{}, s.toolError("subagent_status", err)
	}
	out := StatusResult{Subagent: sa, ElapsedSeconds: seconds(sa.Elapsed), WallSeconds: seconds(sa.Wall), Line: sa.String()}
	text, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, StatusResult{}, fmt.Errorf("subagent_status: %w", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, out, nil
}

// seconds is d in seconds, to the whole millisecond as the API's
// elapsedMs and wallMs state it (truncated), so that subagent_status
// and the API show the same time.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// listSubagents is list_subagents: the MCP session's runs, one line each.
func (s *Server) listSubagents(ctx context.Context, req *mcp.CallToolRequest, a ava.ListSubagentsArgs) (*mcp.CallToolResult, any, error) {
	f := ava.SubagentFilter{Parent: s.parentKey(req.Session)}
	if !a.All {
		f.Status = lifecycle.Active
	}
	list, err := s.rt.Subagents(ctx, f)
	if err != nil {
		return nil, nil, s.toolError("list_subagents", err)
	}
	if len(list) == 0 {
		none := "no subagents"
		if !a.All {
			none += " running or queued"
		}
		return textResult(none), nil, nil
	}
	var b strings.Builder
	for _, sa := range list {
		b.WriteString(sa.String())
		b.WriteByte('\n')
	}
	return textResult(b.String()), nil, nil
}

// cancelSubagent is cancel_subagent.
func (s *Server) cancelSubagent(ctx context.Context, _ *mcp.CallToolRequest, a ava.SubagentIDArgs) (*mcp.CallToolResult, any, error) {
	sa, err := s.rt.Cancel(ctx, a.SubagentID)
	if err != nil {
		return nil, nil, s.toolError("cancel_subagent", err)
	}
	if sa.Status.Final() && sa.Status != lifecycle.Cancelled {
		return textResult(fmt.Sprintf("%s (%s) had already ended: %s", sa.ID, sa.Role, sa.Status)), nil, nil
	}
	return textResult(fmt.Sprintf("cancel requested for %s (%s)", sa.ID, sa.Role)), nil, nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// forward serves a tool over MCP (read_ava_logs): its text is the
// result, its failure an error result.
func (s *Server) forward(t tool.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := json.RawMessage(req.Params.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		res, err := t.Run(ctx, args)
		if err != nil {
			return nil, s.toolError(t.Name(), err)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Output}}, IsError: res.IsError}, nil
	}
}

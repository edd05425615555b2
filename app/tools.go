package app

import (
	"context"
	"fmt"
	"os"

	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/files"
	"github.com/avaagent/ava/tool/shell"
	"github.com/avaagent/ava/tool/web"
)

// BuiltinTools returns every built-in tool that needs no store: web,
// files and shell, configured from cfg and the environment.
func (in *Instance) BuiltinTools() []tool.Tool {
	ws := in.Config.Workspace
	var out []tool.Tool
	out = append(out, web.New(web.ConfigFromEnv(os.Getenv)).All()...)
	out = append(out, files.New(files.Config{Workspace: ws}).All()...)
	out = append(out, shell.New(shell.Config{Workspace: ws}).All()...)
	return out
}

// Tools returns the orchestrator's tool registry.
func (in *Instance) Tools(ctx context.Context) (*tool.Registry, error) {
	reg, err := tool.NewRegistry(in.BuiltinTools()...)
	if err != nil {
		return nil, fmt.Errorf("orchestrator tools: %w", err)
	}
	return reg, nil
}

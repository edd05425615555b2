package app

import (
	"context"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/files"
	"github.com/avaagent/ava/tool/logs"
	"github.com/avaagent/ava/tool/memory"
	"github.com/avaagent/ava/tool/shell"
	"github.com/avaagent/ava/tool/web"
)

// builtinTools are every built-in tool, configured from the instance's
// configuration.
func (in *Instance) builtinTools() []tool.Tool {
	ws := in.Config.Workspace
	var out []tool.Tool
	out = append(out, web.New(webConfig(in.Config.Web)).All()...)
	out = append(out, files.New(files.Config{Workspace: ws, Deny: []string{in.Config.DataRoot}}).All()...)
	out = append(out, shell.New(in.shellConfig()).All()...)
	out = append(out, memory.New(in.Store).All()...)
	return out
}

// webConfig is the web tools' configuration from config.yaml's web
// settings and their variables.
func webConfig(c config.Web) web.Config {
	return web.Config{SearXNGURL: c.SearXNGURL, BraveAPIKey: c.BraveAPIKey, BraveBaseURL: c.BraveBaseURL,
		TavilyAPIKey: c.TavilyAPIKey, TavilyBaseURL: c.TavilyBaseURL, AllowPrivate: c.AllowPrivate}
}

// OrchestratorTools returns the orchestrator's registry: the built-ins
// plus the subagent tools.
func (in *Instance) OrchestratorTools(ctx context.Context) (*tool.Registry, error) {
	extra := append(in.Subagent.Tools(), logs.New(in.LogReader(audit.ReaderOptions{Logger: in.Log}), nil))
	return in.Tools.With(extra...)
}

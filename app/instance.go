package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// RoleSkippedMessage is the message of the warning Open logs for each
// role file it could not load (also in Instance.RoleErrors); a caller
// that reports RoleErrors itself can leave these records out.
const RoleSkippedMessage = "role file skipped"

// Instance is an opened Ava: configuration, models, the store, the audit
// log, the event hub, the tools and the subagent manager. Close it to stop
// the subagents and flush everything.
type Instance struct {
	Config  config.Config
	Catalog *llm.Catalog
	Store   *sqlite.Store
	Audit   *audit.Writer
	Hub     *event.Hub
	// Tools are the built-in tools (what roles choose from).
	Tools    *tool.Registry
	Subagent *subagent.Manager
	// RoleErrors are role files that could not be loaded.
	RoleErrors []error
	Log        *slog.Logger

	closers []func() error
}

// Open builds an Instance from a validated cfg, creating the data root.
// Every event published to its Hub goes to the audit log.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (in *Instance, err error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.EnsureDataRoot(); err != nil {
		return nil, err
	}
	in = &Instance{Config: cfg, Log: log}
	defer func() {
		if err != nil {
			in.Close()
		}
	}()
	if in.Catalog, err = Catalog(cfg, log); err != nil {
		return nil, err
	}
	if in.Store, err = sqlite.Open(ctx, filepath.Join(cfg.DataRoot, sqlite.FileName), sqlite.Options{Logger: log}); err != nil {
		return nil, err
	}
	in.closers = append(in.closers, in.Store.Close)
	if in.Audit, err = audit.NewWriter(cfg.DataRoot, audit.Options{Logger: log, Secrets: cfg.Secrets()}); err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	in.closers = append(in.closers, in.Audit.Close)
	in.Hub = event.NewHub(in.Audit)
	lifecycle, err := audit.NewSessionLogs(cfg.DataRoot, audit.SessionOptions{Secrets: cfg.Secrets()})
	if err != nil {
		return nil, fmt.Errorf("open session logs: %w", err)
	}
	if in.Tools, err = tool.NewRegistry(in.builtinTools()...); err != nil {
		return nil, fmt.Errorf("built-in tools: %w", err)
	}
	roles, roleErrs := subagent.LoadRoles(RoleDirs(cfg), in.roleToolKnown)
	in.RoleErrors = roleErrs
	for _, e := range roleErrs {
		log.Warn(RoleSkippedMessage, "err", e)
	}
	in.Subagent = subagent.NewManager(subagent.Options{Catalog: in.Catalog, Tools: in.Tools, Store: in.Store, Hub: in.Hub,
		Lifecycle: lifecycle, Roles: roles, MaxConcurrent: cfg.MaxConcurrentSubagents, StallAfter: cfg.StallAfter,
		Workspace: cfg.Workspace, Logger: log})
	if err := in.Subagent.Start(ctx); err != nil {
		return nil, err
	}
	in.closers = append(in.closers, in.Subagent.Close)
	return in, nil
}

// roleToolKnown reports whether a role file may name the tool: a
// built-in, or one a subagent never gets (the spawn and subagent tools,
// which are not built-ins), so that such a role loads with the tool
// withheld instead of being refused.
func (in *Instance) roleToolKnown(name string) bool {
	_, ok := in.Tools.Get(name)
	return ok || subagent.WithheldReason(name) != ""
}

// RoleDirs are where custom roles are found: the data root's agents/
// then the workspace's .ava/agents/ (which wins on a name clash).
func RoleDirs(cfg config.Config) []string {
	dirs := []string{filepath.Join(cfg.DataRoot, "agents")}
	if cfg.Workspace != "" {
		dirs = append(dirs, filepath.Join(cfg.Workspace, ".ava", "agents"))
	}
	var out []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// History is the store-backed session history.
func (in *Instance) History() orchestrator.History {
	return orchestrator.StoreHistory{Store: in.Store}
}

// Close stops the subagents and flushes and closes everything the
// instance opened, in reverse order.
func (in *Instance) Close() error {
	var errs []error
	for i := len(in.closers) - 1; i >= 0; i-- {
		if err := in.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	in.closers = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close ava: %w", err)
	}
	return nil
}

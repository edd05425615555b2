package ava

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/session"
)

// What a command line or a program's own front end needs besides the
// Runtime's methods: the model the orchestrator runs on, whether it is a
// real one, the roles' models and tools as a subagent would get them,
// the sandbox, workspace trust and the audit log without a runtime.

// TurnLimits bound one turn of a main session (SendOptions.Limits):
// wall-clock timeout, cost, tokens and model calls.
type TurnLimits = session.Limits

// IsOffline reports whether the model named model ("provider/model") is
// the offline scripted model, which a surface labels as such.
func IsOffline(model string) bool { return strings.HasPrefix(model, scripted.Name+"/") }

// ProviderConfigured reports whether cfg configures a real model
// provider (Anthropic, OpenRouter, OpenAI or an OpenAI-compatible
// server); for an opened runtime, ProviderConfigured(rt.Config()).
func ProviderConfigured(cfg config.Config) bool { return app.HasRealProviderConfig(cfg) }

// OrchestratorModel resolves the model a main session's turn runs on and
// returns its full name ("provider/model"): name if given (an alias such
// as "sonnet", or provider/model), else the configured AVA_MODEL, else the
// default provider's "sonnet". With no real provider and no model named
// it is ErrNoModel; a name no provider serves is the catalog's error.
// IsOffline tells whether the answer is the offline model.
func (r *Runtime) OrchestratorModel(name string) (string, error) {
	m, err := app.OrchestratorModel(r.in.Config, r.in.Catalog, name)
	if err != nil {
		return "", err
	}
	return m.Name(), nil
}

// modelReady is ErrNoModel when a spawn has no model to run on: no real
// provider, no model configured (AVA_MODEL, or Offline) and a config that
// names none
// (the rule of OrchestratorModel, so that a program without a provider
// is told so rather than silently given the offline model, as `ava
// spawn` refuses without --offline).
func (r *Runtime) modelReady(configs ...SubagentConfig) error {
	if r.in.Config.Model != "" || ProviderConfigured(r.in.Config) {
		return nil
	}
	for _, c := range configs {
		if c.Model == "" {
			return fmt.Errorf("spawn %s: %w", c.Role, ErrNoModel)
		}
	}
	return nil
}

// RoleModel resolves a role's model as a subagent of the role gets it
// and returns its full name ("provider/model").
func (r *Runtime) RoleModel(role Role) (string, error) {
	m, err := r.in.Catalog.ResolveAs(role.Model, role.ModelBy)
	if err != nil {
		return "", fmt.Errorf("role %s: model %s: %w", role.Name, role.Model, err)
	}
	return m.Name(), nil
}

// BuiltinRoleNames lists the built-in roles' names (for shell
// completion, without opening a runtime).
func BuiltinRoleNames() []string { return app.BuiltinRoleNames() }

// WithheldReason says why no subagent ever gets the named tool (a
// role may list it, but the hierarchy rule withholds it), or "" when a
// role may give it to its subagents.
func WithheldReason(toolName string) string { return app.WithheldReason(toolName) }

// SandboxSummary says in one line which sandbox protections the process
// tools (run_bash, python_exec) have in this runtime on this machine.
func (r *Runtime) SandboxSummary() string { return r.in.SandboxSummary() }

// WorkspaceTrust is what the person trusted of workspace ws (`ava
// trust`) and how its role files differ from it now: trusted reports
// whether it is trusted at all; changes lists its role files that are
// new, changed or removed since; now is every role file's hash, as `ava
// trust` records it.
func WorkspaceTrust(cfg config.Config, ws string) (trusted bool, changes []config.FileChange, now map[string]string, err error) {
	return app.WorkspaceTrust(cfg, ws)
}

// The messages of the warnings Open logs for each role file it skips and
// each role that replaces another: a front end that reports these itself
// (Runtime.RoleErrors, Role.Overrides) may drop the log records.
const (
	RoleSkippedMessage  = app.RoleSkippedMessage
	RoleOverrideMessage = app.RoleOverrideMessage
)

// OpenLogReader returns a reader of the audit log of cfg without opening
// a runtime (`ava logs` needs no daemon and writes nothing), and a
// function releasing it. With a PostgreSQL store it reads the cluster's
// events from it, opened read-only; otherwise the data root's files.
func OpenLogReader(ctx context.Context, cfg config.Config, log *slog.Logger, opts audit.ReaderOptions) (*LogReader, func() error, error) {
	return app.OpenLogReader(ctx, cfg, log, opts)
}

package ava

import (
	"fmt"
	"strings"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/session"
)

// Models: the model the orchestrator and the roles run on, whether it is
// a real one or the offline scripted model, and the limits of a turn.

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
// spawn` would without the command line's offline rule).
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

// OfflineModel is the orchestrator's model when no provider is
// configured: a scripted model that shows the flow without a network.
const OfflineModel = scripted.Name + "/demo"

// Offline returns cfg set to answer with the offline model when no
// provider is configured and no model is named, and whether it did: what
// `ava serve` and `ava mcp` do, and what a program does that wants to run
// without a provider (else Send and Spawn return ErrNoModel).
func Offline(cfg config.Config) (config.Config, bool) {
	if app.HasRealProviderConfig(cfg) || cfg.Model != "" {
		return cfg, false
	}
	cfg.Model = OfflineModel
	return cfg, true
}

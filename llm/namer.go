package llm

import (
	"context"
	"errors"
	"fmt"
)

// Namer is who named a model. A model name is an instruction to Ava:
// for most providers it picks what to call, but for an operator-only
// provider (the offline scripted model, whose model ID is the path of a
// file Ava reads and replays as the model's choices) it hands the model's
// decisions to whoever wrote that file. So only the operator may name
// such a model; every other source (a model's tool call, an API or MCP
// client, a workspace role file) is refused. An alias the operator
// configured (or the built-in aliases, which map to the demo script) is
// the operator's choice, whoever uses it.
type Namer uint8

const (
	// NamedByOther is any source but the operator: the orchestrator's
	// spawn_subagent arguments, the HTTP API, MCP clients, a workspace's
	// role files. The zero value, so a path that forgets to say is
	// refused rather than trusted.
	NamedByOther Namer = iota
	// NamedByOperator is the operator: AVA_MODEL, a --model flag,
	// config.yaml, a role file in $AVA_DATA_ROOT/agents/, a library
	// caller, or a run record the store holds (checked when admitted).
	NamedByOperator
)

// String names the source for messages.
func (n Namer) String() string {
	if n == NamedByOperator {
		return "the operator"
	}
	return "a non-operator source"
}

// OperatorOnly is implemented by a provider whose models only the
// operator may name (see Namer).
type OperatorOnly interface {
	Provider
	// OperatorOnly marks the provider; it is never called.
	OperatorOnly()
}

// ModelChecker is implemented by a provider that can tell before a run
// whether a model can be loaded at all (the scripted model reads its
// script), so that a run that could never call its model is refused, or
// ended, at once with the reason instead of failing on every call.
type ModelChecker interface {
	CheckModel(ctx context.Context, id string) error
}

// ErrOperatorOnlyModel is a model name of an operator-only provider
// given by a non-operator source.
var ErrOperatorOnlyModel = errors.New("only the operator may name a scripted model (AVA_MODEL, --model, config.yaml, or a role file in $AVA_DATA_ROOT/agents/); refused")

// ResolveAs turns a model name given by by into a Model, as Resolve does,
// refusing a model of an operator-only provider that a non-operator
// named other than through an alias.
func (c *Catalog) ResolveAs(name string, by Namer) (Model, error) {
	m, viaAlias, err := c.resolve(name)
	if err != nil {
		return Model{}, err
	}
	if _, opOnly := m.Provider.(OperatorOnly); opOnly && by != NamedByOperator && !viaAlias {
		return Model{}, fmt.Errorf("model %q: %w", name, ErrOperatorOnlyModel)
	}
	return m, nil
}

// CheckModel reports whether m can be loaded, when its provider can
// tell (ModelChecker); nil otherwise.
func CheckModel(ctx context.Context, m Model) error {
	ch, ok := m.Provider.(ModelChecker)
	if !ok {
		return nil
	}
	if err := ch.CheckModel(ctx, m.ID); err != nil {
		return fmt.Errorf("model %s cannot be loaded: %w", m.Name(), err)
	}
	return nil
}

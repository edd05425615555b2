// Package tool defines what a tool is to Ava's agent loop: a name, a
// description a model can act on, a JSON Schema for its arguments, and a Run
// method. A tool's failure (bad arguments, a command that exits non-zero, a
// page that will not load) is a Result with IsError set, for the model to
// read; a Go error is reserved for infrastructure faults.
//
// Built-in tools live in subpackages by what they touch: tool/web,
// tool/files, tool/shell, tool/memory.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Tool is something a model can call.
type Tool interface {
	// Name is the identifier the model calls the tool by.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Schema is the JSON Schema (an object schema) of the arguments.
	Schema() json.RawMessage
	// Run executes one call. args are the raw arguments the model sent.
	// It must return promptly once ctx is done, having stopped any process
	// it started.
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool call gives back to the model.
type Result struct {
	// Output is the text the model reads.
	Output string
	// IsError marks a failed call; Output then says what went wrong.
	IsError bool
}

// Errorf returns an error Result with a formatted message.
func Errorf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), IsError: true}
}

// Registry is a set of tools by name. It is immutable once built, so it
// is safe for concurrent use.
type Registry struct {
	byName map[string]Tool
}

// NewRegistry returns a registry of tools. It refuses duplicate or empty
// names.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		name := t.Name()
		if name == "" {
			return nil, fmt.Errorf("tool registry: a tool has no name")
		}
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("tool registry: %q registered twice", name)
		}
		r.byName[name] = t
	}
	return r, nil
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.byName[name]
	return t, ok
}

// Names lists the tools' names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Tools lists the tools sorted by name.
func (r *Registry) Tools() []Tool {
	out := make([]Tool, 0, len(r.Names()))
	for _, n := range r.Names() {
		out = append(out, r.byName[n])
	}
	return out
}

// Subset returns a registry holding only the named tools, or an error
// naming the first unknown one.
func (r *Registry) Subset(names []string) (*Registry, error) {
	var tools []Tool
	for _, n := range names {
		t, ok := r.Get(n)
		if !ok {
			return nil, fmt.Errorf("unknown tool %q (known: %s)", n, strings.Join(r.Names(), ", "))
		}
		tools = append(tools, t)
	}
	return NewRegistry(tools...)
}

// With returns a registry holding r's tools plus extra ones.
func (r *Registry) With(extra ...Tool) (*Registry, error) {
	return NewRegistry(append(r.Tools(), extra...)...)
}

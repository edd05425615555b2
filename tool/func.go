package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Func is a Tool built from a typed Go function. Its schema is inferred
// from Args (use `json` tags for names and `jsonschema` tags for
// descriptions; fields without omitempty are required), and arguments are
// validated against it before fn runs, so fn sees only well-formed input.
type Func[Args any] struct {
	name, desc string
	schema     json.RawMessage
	resolved   *jsonschema.Resolved
	fn         func(ctx context.Context, args Args) (Result, error)
}

// NewFunc builds a Func tool. It panics if Args cannot be described by a
// JSON Schema: that is a programming error found by any test.
func NewFunc[Args any](name, description string, fn func(ctx context.Context, args Args) (Result, error)) *Func[Args] {
	s, err := jsonschema.For[Args](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: infer schema: %v", name, err))
	}
	return NewFuncWithSchema(name, description, s, fn)
}

// NewFuncWithSchema builds a Func tool with a hand-tuned schema (enums,
// bounds, defaults the inference cannot know).
func NewFuncWithSchema[Args any](name, description string, s *jsonschema.Schema, fn func(ctx context.Context, args Args) (Result, error)) *Func[Args] {
	resolved, err := s.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: resolve schema: %v", name, err))
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool %s: marshal schema: %v", name, err))
	}
	return &Func[Args]{name: name, desc: description, schema: raw, resolved: resolved, fn: fn}
}

// Name implements Tool.
func (f *Func[Args]) Name() string { return f.name }

// Description implements Tool.
func (f *Func[Args]) Description() string { return f.desc }

// Schema implements Tool.
func (f *Func[Args]) Schema() json.RawMessage { return f.schema }

// Run implements Tool: it validates args, decodes them and calls fn.
func (f *Func[Args]) Run(ctx context.Context, raw json.RawMessage) (Result, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return Errorf("arguments are not valid JSON: %v", err), nil
	}
	if err := f.resolved.Validate(generic); err != nil {
		return Errorf("invalid arguments for %s: %v", f.name, err), nil
	}
	var args Args
	if err := json.Unmarshal(raw, &args); err != nil {
		return Errorf("invalid arguments for %s: %v", f.name, err), nil
	}
	return f.fn(ctx, args)
}

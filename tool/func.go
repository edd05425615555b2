package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Func is a Tool built from a typed Go function. Its schema is inferred
// from Args (use `json` tags for names and `jsonschema` tags for
// descriptions; fields without omitempty are required), and arguments are
// validated against it before fn runs, so fn sees only well-formed input.
type Func[Args any] struct {
	name, desc string
	*compiled
	fn func(ctx context.Context, args Args) (Result, error)
}

// compiled is a tool's schema: marshalled for the model when the tool is
// built, resolved for validation at its first call (most tools of a
// process are offered to a model but never called, and a command's start
// is the sooner for it).
type compiled struct {
	schema  json.RawMessage
	resolve func() (*jsonschema.Resolved, error)
}

// inferred holds the schema inferred for each Args type (reflect.Type →
// *compiled): the tools built per session or per run infer, marshal and
// resolve their schema once per process.
var inferred sync.Map

// NewFunc builds a Func tool. It panics if Args cannot be described by a
// JSON Schema: that is a programming error found by any test.
func NewFunc[Args any](name, description string, fn func(ctx context.Context, args Args) (Result, error)) *Func[Args] {
	t := reflect.TypeFor[Args]()
	if c, ok := inferred.Load(t); ok {
		return &Func[Args]{name: name, desc: description, compiled: c.(*compiled), fn: fn}
	}
	s, err := jsonschema.For[Args](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: infer schema: %v", name, err))
	}
	c, _ := inferred.LoadOrStore(t, compile(name, s))
	return &Func[Args]{name: name, desc: description, compiled: c.(*compiled), fn: fn}
}

// NewFuncWithSchema builds a Func tool with a hand-tuned schema (enums,
// bounds, defaults the inference cannot know).
func NewFuncWithSchema[Args any](name, description string, s *jsonschema.Schema, fn func(ctx context.Context, args Args) (Result, error)) *Func[Args] {
	return &Func[Args]{name: name, desc: description, compiled: compile(name, s), fn: fn}
}

// compile marshals s now and resolves it once, when first asked.
func compile(name string, s *jsonschema.Schema) *compiled {
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool %s: marshal schema: %v", name, err))
	}
	return &compiled{schema: raw, resolve: sync.OnceValues(func() (*jsonschema.Resolved, error) {
		r, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("tool %s: resolve schema: %w", name, err)
		}
		return r, nil
	})}
}

// CheckSchema resolves the tool's schema now, as its first call would: a
// test of the tools a program builds calls it so that a schema that
// cannot validate is found before a model calls the tool.
func (f *Func[Args]) CheckSchema() error {
	_, err := f.resolve()
	return err
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
	resolved, err := f.resolve()
	if err != nil {
		return Result{}, err
	}
	if err := resolved.Validate(generic); err != nil {
		return Errorf("invalid arguments for %s: %v", f.name, err), nil
	}
	var args Args
	if err := json.Unmarshal(raw, &args); err != nil {
		return Errorf("invalid arguments for %s: %v", f.name, err), nil
	}
	return f.fn(ctx, args)
}

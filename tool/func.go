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

// compiled is a tool's schema: marshalled for a model the first time a
// request offers the tool, resolved for validation at its first call. A
// process builds every tool at its start, but its first request offers
// only the orchestrator's, and most tools are never called: a command's
// start is the sooner for it.
type compiled struct {
	schema  *jsonschema.Schema
	marshal func() (json.RawMessage, error)
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

// compile marshals s and resolves it, each once, when first asked. The
// two never run at once: resolving reads s after marshalling is done (a
// sync.Once's guarantee), and nothing else uses s but CheckSchema, after
// both.
func compile(name string, s *jsonschema.Schema) *compiled {
	marshal := sync.OnceValues(func() (json.RawMessage, error) {
		raw, err := marshalSchema(s)
		if err != nil {
			return nil, fmt.Errorf("tool %s: marshal schema: %w", name, err)
		}
		return raw, nil
	})
	return &compiled{schema: s, marshal: marshal, resolve: sync.OnceValues(func() (*jsonschema.Resolved, error) {
		if _, err := marshal(); err != nil {
			return nil, err
		}
		r, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("tool %s: resolve schema: %w", name, err)
		}
		return r, nil
	})}
}

// CheckSchema marshals and resolves the tool's schema now, as its first
// offer and its first call would: a test of the tools a program builds
// calls it so that a schema that cannot be sent or cannot validate is
// found before a model meets the tool.
//
// It also checks that the bytes a model is sent are what jsonschema's
// own MarshalJSON makes of the schema (see marshalSchema).
func (f *Func[Args]) CheckSchema() error {
	if _, err := f.resolve(); err != nil {
		return err
	}
	raw, _ := f.marshal()
	want, err := json.Marshal(f.schema)
	if err != nil {
		return fmt.Errorf("tool %s: marshal schema: %w", f.name, err)
	}
	if !bytes.Equal(raw, want) {
		return fmt.Errorf("tool %s: the schema sent differs from jsonschema's:\nsent %s\nwant %s", f.name, raw, want)
	}
	return nil
}

// Name implements Tool.
func (f *Func[Args]) Name() string { return f.name }

// Description implements Tool.
func (f *Func[Args]) Description() string { return f.desc }

// Schema implements Tool. A schema that cannot be marshalled is a
// programming error (CheckSchema finds it in a test): it panics.
func (f *Func[Args]) Schema() json.RawMessage {
	raw, err := f.marshal()
	if err != nil {
		panic(err.Error())
	}
	return raw
}

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

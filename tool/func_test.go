package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/avaagent/ava/tool"
)

type args struct {
	Query string `json:"query" jsonschema:"what to look for"`
	Limit int    `json:"limit,omitempty"`
}

func TestFuncValidatesBeforeRunning(t *testing.T) {
	ran := 0
	f := tool.NewFunc("find", "Find things.", func(ctx context.Context, a args) (tool.Result, error) {
		ran++
		return tool.Result{Output: a.Query}, nil
	})
	var schema map[string]any
	if err := json.Unmarshal(f.Schema(), &schema); err != nil || schema["type"] != "object" {
		t.Fatalf("schema %s", f.Schema())
	}
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "query" {
		t.Fatalf("required %v", schema["required"])
	}
	for raw, want := range map[string]string{`{"limit":1}`: "query", `{"query":5}`: "query", `{x`: "not valid JSON"} {
		res, err := f.Run(context.Background(), json.RawMessage(raw))
		if err != nil || !res.IsError || !strings.Contains(res.Output, want) {
			t.Errorf("%s: %+v %v", raw, res, err)
		}
	}
	if ran != 0 {
		t.Fatal("fn ran on invalid arguments")
	}
	res, _ := f.Run(context.Background(), json.RawMessage(`{"query":"q"}`))
	if res.Output != "q" || ran != 1 {
		t.Fatalf("%+v", res)
	}
}

func TestRegistry(t *testing.T) {
	a := tool.NewFunc("a", "", func(context.Context, args) (tool.Result, error) { return tool.Result{}, nil })
	b := tool.NewFunc("b", "", func(context.Context, args) (tool.Result, error) { return tool.Result{}, nil })
	if _, err := tool.NewRegistry(a, a); err == nil {
		t.Fatal("duplicate accepted")
	}
	r, _ := tool.NewRegistry(a, b)
	sub, err := r.Subset([]string{"b"})
	if err != nil || strings.Join(sub.Names(), ",") != "b" {
		t.Fatal(sub.Names(), err)
	}
	if _, err := r.Subset([]string{"c"}); err == nil || !strings.Contains(err.Error(), `unknown tool "c"`) {
		t.Fatal(err)
	}
}

// TestFuncSchemaThatCannotResolve: a hand-tuned schema that cannot be
// resolved is an error at the tool's first call and from CheckSchema,
// never a panic at the start of a program that may not call it.
func TestFuncSchemaThatCannotResolve(t *testing.T) {
	s := &jsonschema.Schema{Type: "object", Ref: "#/$defs/missing"}
	f := tool.NewFuncWithSchema("broken", "d", s, func(context.Context, struct{}) (tool.Result, error) {
		t.Fatal("ran with a schema that cannot validate")
		return tool.Result{}, nil
	})
	if err := f.CheckSchema(); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("CheckSchema: %v", err)
	}
	if _, err := f.Run(context.Background(), json.RawMessage(`{}`)); err == nil {
		t.Fatal("Run validated against a schema that cannot resolve")
	}
}

// TestNewFuncSharesTheInferredSchema: tools of one argument type built
// again and again (per session, per run) share one schema.
func TestNewFuncSharesTheInferredSchema(t *testing.T) {
	type args struct {
		Q string `json:"q"`
	}
	fn := func(context.Context, args) (tool.Result, error) { return tool.Result{Output: "ok"}, nil }
	a, b := tool.NewFunc("a", "d", fn), tool.NewFunc("b", "d", fn)
	if &a.Schema()[0] != &b.Schema()[0] {
		t.Fatal("the schema was inferred twice")
	}
	if res, err := b.Run(context.Background(), json.RawMessage(`{}`)); err != nil || !res.IsError {
		t.Fatalf("a missing required field: %+v, %v", res, err)
	}
	if res, err := a.Run(context.Background(), json.RawMessage(`{"q":"x"}`)); err != nil || res.Output != "ok" {
		t.Fatalf("valid arguments: %+v, %v", res, err)
	}
}

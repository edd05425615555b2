package tool

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestMarshalSchemaIsJSONSchemas: marshalSchema gives jsonschema's own
// bytes for schemas inferred from Go types, hand-tuned ones, and ones
// with keywords it leaves to jsonschema.
func TestMarshalSchemaIsJSONSchemas(t *testing.T) {
	type inner struct {
		Name string   `json:"name" jsonschema:"a <name> & more \u2028"`
		Tags []string `json:"tags,omitempty"`
	}
	type args struct {
		Path     string            `json:"path" jsonschema:"the file's path"`
		Count    int               `json:"count,omitempty"`
		Ratio    float64           `json:"ratio,omitempty"`
		On       bool              `json:"on,omitempty"`
		Items    []inner           `json:"items,omitempty"`
		Nested   *inner            `json:"nested,omitempty"`
		Labels   map[string]string `json:"labels,omitempty"`
		Anything any               `json:"anything,omitempty"`
	}
	inferred, err := jsonschema.For[args](nil)
	if err != nil {
		t.Fatal(err)
	}
	tuned, _ := jsonschema.For[args](nil)
	tuned.Properties["count"].Minimum = jsonschema.Ptr(1.0)
	tuned.Properties["count"].Maximum = jsonschema.Ptr(1e21)
	tuned.Properties["count"].Default = json.RawMessage(" 5 ")
	tuned.Properties["path"].MinLength = jsonschema.Ptr(1)
	tuned.Properties["path"].Pattern = `^[^<>]+$`
	tuned.Properties["path"].Enum = []any{"a", 1.5, nil}
	tuned.Properties["items"].MaxItems = jsonschema.Ptr(20)
	tuned.Title = "args"
	tuned.PropertyOrder = []string{"on", "path"}
	cases := map[string]*jsonschema.Schema{
		"inferred":     inferred,
		"tuned":        tuned,
		"empty":        {},
		"types":        {Types: []string{"null", "string"}},
		"empty props":  {Type: "object", Properties: map[string]*jsonschema.Schema{}},
		"false":        {Not: &jsonschema.Schema{}},
		"not":          {Type: "string", Not: &jsonschema.Schema{Type: "integer"}},
		"anyOf (left)": {AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "integer"}}},
		"nested left":  {Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Const: jsonschema.Ptr[any]("c")}}},
		"extra (left)": {Type: "string", Extra: map[string]any{"x-ava": true}},
	}
	for name, s := range cases {
		want, werr := json.Marshal(s)
		got, gerr := marshalSchema(s)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%s:\ngot  %s (%v)\nwant %s (%v)", name, got, gerr, want, werr)
		}
	}
	// Refused as jsonschema refuses them.
	for name, s := range map[string]*jsonschema.Schema{
		"type and types":                 {Type: "string", Types: []string{"string"}},
		"duplicate order":                {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {}}, PropertyOrder: []string{"a", "a"}},
		"duplicate order, no properties": {Type: "object", PropertyOrder: []string{"a", "a"}},
		"nested duplicate order":         {Type: "object", Properties: map[string]*jsonschema.Schema{"a": {PropertyOrder: []string{"b", "b"}}}},
	} {
		if _, err := marshalSchema(s); err == nil {
			t.Errorf("%s: marshalled", name)
		}
	}
}

// BenchmarkMarshalSchema: a tool's inferred schema, marshalled directly
// and by jsonschema.
func BenchmarkMarshalSchema(b *testing.B) {
	type args struct {
		Path  string   `json:"path" jsonschema:"the file's path"`
		Count int      `json:"count,omitempty" jsonschema:"how many"`
		Tags  []string `json:"tags,omitempty" jsonschema:"labels"`
	}
	s, _ := jsonschema.For[args](nil)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			marshalSchema(s)
		}
	})
	b.Run("jsonschema", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(s)
		}
	})
}

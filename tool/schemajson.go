package tool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// marshalSchema is json.Marshal(s), byte for byte, for the schemas tools
// have: type, properties, items, descriptions, enums and bounds. It
// writes them directly where jsonschema's MarshalJSON marshals a
// seventy-field struct by reflection for every property (about 1.5 ms
// of a command's start for the orchestrator's sixteen tools). A schema
// using any other keyword is marshalled by jsonschema itself; CheckSchema
// checks that both give the same bytes (app's TestEveryToolSchemaResolves
// runs it on every tool an instance offers).
func marshalSchema(s *jsonschema.Schema) ([]byte, error) {
	var b bytes.Buffer
	if !writeSchema(&b, s) {
		return json.Marshal(s)
	}
	return b.Bytes(), nil
}

// handledFields are the Schema fields writeSchema writes; unhandled are
// the indexes of all the others, found once by reflection.
var (
	handledFields = []string{"Type", "Types", "Properties", "PropertyOrder", "Items", "Title", "Description",
		"Default", "Enum", "Minimum", "Maximum", "MinLength", "MaxLength", "Pattern", "MinItems", "MaxItems",
		"Required", "AdditionalProperties", "Not", "Format"}
	unhandled = sync.OnceValue(func() []int {
		t := reflect.TypeFor[jsonschema.Schema]()
		var out []int
		for i := range t.NumField() {
			if !slices.Contains(handledFields, t.Field(i).Name) {
				out = append(out, i)
			}
		}
		return out
	})
)

// handled reports whether s uses no field but those writeSchema writes.
func handled(s *jsonschema.Schema) bool {
	v := reflect.ValueOf(s).Elem()
	for _, i := range unhandled() {
		if !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

// writeSchema writes s as jsonschema's MarshalJSON does (its keys in the
// order of its struct's fields, properties in PropertyOrder and then by
// name, {} as true and {"not":true} as false); it reports
// false, having written nothing that counts, when s uses a keyword it
// does not handle.
func writeSchema(b *bytes.Buffer, s *jsonschema.Schema) bool {
	if s == nil {
		b.WriteString("null")
		return true
	}
	if !handled(s) || (s.Type != "" && s.Types != nil) || duplicates(s.PropertyOrder) {
		return false // jsonschema refuses the last two: let it say why
	}
	start := b.Len()
	b.WriteByte('{')
	n := 0
	key := func(k string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteByte('"')
		b.WriteString(k)
		b.WriteString(`":`)
	}
	value := func(k string, v any) bool {
		raw, err := json.Marshal(v)
		if err != nil {
			return false
		}
		key(k)
		b.Write(raw)
		return true
	}
	ok := true
	switch {
	case s.Type != "":
		ok = value("type", s.Type)
	case s.Types != nil:
		ok = value("type", s.Types)
	}
	if ok && s.Properties != nil {
		key("properties")
		ok = writeProperties(b, s.Properties, s.PropertyOrder)
	}
	if ok && s.Items != nil {
		key("items")
		ok = writeSchema(b, s.Items)
	}
	for _, f := range []struct {
		name string
		set  bool
		v    any
	}{
		{"title", s.Title != "", s.Title},
		{"description", s.Description != "", s.Description},
		{"default", len(s.Default) > 0, s.Default},
		{"enum", len(s.Enum) > 0, s.Enum},
		{"minimum", s.Minimum != nil, s.Minimum},
		{"maximum", s.Maximum != nil, s.Maximum},
		{"minLength", s.MinLength != nil, s.MinLength},
		{"maxLength", s.MaxLength != nil, s.MaxLength},
		{"pattern", s.Pattern != "", s.Pattern},
		{"minItems", s.MinItems != nil, s.MinItems},
		{"maxItems", s.MaxItems != nil, s.MaxItems},
		{"required", len(s.Required) > 0, s.Required},
	} {
		if ok && f.set {
			ok = value(f.name, f.v)
		}
	}
	if ok && s.AdditionalProperties != nil {
		key("additionalProperties")
		ok = writeSchema(b, s.AdditionalProperties)
	}
	if ok && s.Not != nil {
		key("not")
		ok = writeSchema(b, s.Not)
	}
	if ok && s.Format != "" {
		ok = value("format", s.Format)
	}
	if !ok {
		b.Truncate(start)
		return false
	}
	b.WriteByte('}')
	switch {
	case n == 0:
		b.Truncate(start)
		b.WriteString("true")
	case bytes.Equal(b.Bytes()[start:], []byte(`{"not":true}`)):
		b.Truncate(start)
		b.WriteString("false")
	}
	return true
}

// writeProperties writes a properties object: the names in order first,
// then the others sorted, as jsonschema does.
func writeProperties(b *bytes.Buffer, props map[string]*jsonschema.Schema, order []string) bool {
	b.WriteByte('{')
	names := make([]string, 0, len(props))
	for _, name := range order {
		if _, ok := props[name]; ok {
			names = append(names, name)
		}
	}
	var rest []string
	for name := range props {
		if !slices.Contains(order, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for i, name := range append(names, rest...) {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(name)
		if err != nil {
			return false
		}
		b.Write(k)
		b.WriteByte(':')
		if !writeSchema(b, props[name]) {
			return false
		}
	}
	b.WriteByte('}')
	return true
}

// duplicates reports whether a name comes twice in order.
func duplicates(order []string) bool {
	for i, name := range order {
		if slices.Contains(order[:i], name) {
			return true
		}
	}
	return false
}

package files

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// inferSchema infers the argument schema of T. It panics on a type that
// has no schema: a programming error any test finds.
func inferSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("files: infer schema: %v", err))
	}
	return s
}

// setMin bounds the integer property name from below.
func setMin(s *jsonschema.Schema, name string, lo float64) {
	prop(s, name).Minimum = &lo
}

// setRange bounds the integer property name on both sides.
func setRange(s *jsonschema.Schema, name string, lo, hi float64) {
	p := prop(s, name)
	p.Minimum, p.Maximum = &lo, &hi
}

func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties[name]
	if !ok {
		panic(fmt.Sprintf("files: schema has no property %q", name))
	}
	return p
}

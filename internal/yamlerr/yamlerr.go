// Package yamlerr decodes the YAML a person writes (config.yaml, a role's
// front matter) strictly, and says what is wrong in the person's words:
// an unknown key with the closest known one, a value of the wrong kind
// with an example of the right one, a syntax error on its own line
// (yaml.v3 reports a parser error's line counted from 0, one line early).
package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/internal/closest"
	"github.com/avaagent/ava/internal/lazyre"
)

// Problem is one mistake: its line (1-based in the data decoded; 0 when
// unknown) and what is wrong.
type Problem struct {
	Line int
	Text string
}

// Error is what Decode found wrong, in the order of the data.
type Error struct{ Problems []Problem }

// Error lists the problems, each with its line.
func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("line %d: %s", p.Line, p.Text)
	}
	return p.Text
}

// Line is the first problem's line (0 when unknown).
func (e *Error) Line() int { return e.Problems[0].Line }

// Detail is the first problem's text, then the others with their lines:
// for a caller that prints the first line itself.
func (e *Error) Detail() string {
	parts := []string{e.Problems[0].Text}
	for _, p := range e.Problems[1:] {
		parts = append(parts, p.String())
	}
	return strings.Join(parts, "; ")
}

// Offset returns e with every known line moved by n (data decoded from
// inside a file: a role's front matter starts on the file's line 2).
func (e *Error) Offset(n int) *Error {
	out := &Error{Problems: make([]Problem, len(e.Problems))}
	for i, p := range e.Problems {
		if p.Line > 0 {
			p.Line += n
		}
		out.Problems[i] = p
	}
	return out
}

// Decode decodes data into v, refusing keys v has no field for; an empty
// document is no error. Its error is an *Error.
func Decode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return Explain(err, data, v)
	}
	return nil
}

// Explain turns an error of yaml.v3 decoding data (into v, which may be
// nil for a syntax check) into an *Error in the person's words. Another
// error is returned as it is.
func Explain(err error, data []byte, v any) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var root yaml.Node
		_ = yaml.Unmarshal(data, &root)
		keys := fieldsByType(reflect.TypeOf(v))
		out := &Error{}
		for _, msg := range te.Errors {
			out.Problems = append(out.Problems, typeProblem(msg, &root, keys))
		}
		return out
	}
	if m := syntaxRE().FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		if parserProblems[m[2]] {
			line++ // a parser error's mark counts from 0
		}
		return &Error{Problems: []Problem{{Line: line, Text: "YAML syntax: " + m[2]}}}
	}
	if m := bareSyntaxRE().FindStringSubmatch(err.Error()); m != nil {
		return &Error{Problems: []Problem{{Line: 1, Text: "YAML syntax: " + m[1]}}}
	}
	return err
}

var (
	syntaxRE     = lazyre.New(`^yaml: line (\d+): (.*)$`)
	bareSyntaxRE = lazyre.New(`^yaml: (.*)$`)
	lineRE       = lazyre.New(`^line (\d+): (.*)$`)
	unknownRE    = lazyre.New("^field (\\S+) not found in type (\\S+)$")
	mismatchRE   = lazyre.New("^cannot unmarshal !!(\\w+) `(.*)` into (.+)$")
)

// parserProblems are yaml.v3's parser errors (parserc.go), whose line
// it reports counted from 0; its scanner errors count from 1.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'": true, "did not find expected ',' or '}'": true,
	"did not find expected '-' indicator": true, "did not find expected <document start>": true,
	"did not find expected <stream-start>": true, "did not find expected key": true,
	"did not find expected node content": true, "found duplicate %TAG directive": true,
	"found duplicate %YAML directive": true, "found incompatible YAML document": true,
	"found undefined tag handle": true,
}

// typeProblem explains one of a TypeError's messages ("line 3: …").
func typeProblem(msg string, root *yaml.Node, keys map[string][]string) Problem {
	line := 0
	if m := lineRE().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if m := unknownRE().FindStringSubmatch(msg); m != nil {
		text := fmt.Sprintf("unknown setting `%s`", m[1])
		known := keys[m[2]]
		if near := closest.Match(m[1], known, max(2, len(m[1])/3)); near != "" {
			text += fmt.Sprintf(" — did you mean `%s`?", near)
		} else if len(known) > 0 && len(known) <= 16 {
			text += " (known here: " + strings.Join(known, ", ") + ")"
		}
		return Problem{Line: line, Text: text}
	}
	if m := mismatchRE().FindStringSubmatch(msg); m != nil {
		_, group := keys[m[3]]
		return Problem{Line: line, Text: mismatch(keyAt(root, line, m[2]), m[1], m[2], m[3], group)}
	}
	return Problem{Line: line, Text: msg}
}

// mismatch says what kind of value key wants (group: a struct of
// settings), with an example.
func mismatch(key, kind, value, into string, group bool) string {
	name := "this value"
	if key != "" {
		name = "`" + key + "`"
	}
	switch {
	case strings.HasPrefix(into, "[]"):
		items := strings.FieldsFunc(value, func(r rune) bool { return r == ' ' || r == ',' })
		for i, it := range items {
			items[i] = strconv.Quote(it)
		}
		example := strings.Join(items, ", ")
		if key != "" {
			example = key + ": [" + example + "]"
		} else {
			example = "[" + example + "]"
		}
		return fmt.Sprintf("%s is a list, not a single %s: write %s", name, kindWord(kind), example)
	case strings.HasPrefix(into, "int"), strings.HasPrefix(into, "uint"):
		return fmt.Sprintf("%s is a whole number, not `%s`", name, value)
	case strings.HasPrefix(into, "float"):
		return fmt.Sprintf("%s is a number, not `%s`", name, value)
	case into == "bool":
		return fmt.Sprintf("%s is true or false, not `%s`", name, value)
	case into == "time.Duration":
		return fmt.Sprintf("%s is a duration such as 30s, 5m or 1h30m, not `%s`", name, value)
	case into == "string":
		return fmt.Sprintf("%s is one value, not a %s", name, kindWord(kind))
	case group, strings.HasPrefix(into, "map["):
		return fmt.Sprintf("%s is a group of settings (indented key: value lines), not a %s", name, kindWord(kind))
	}
	return fmt.Sprintf("%s cannot be the %s `%s`", name, kindWord(kind), value)
}

// kindWord names a YAML tag for a person.
func kindWord(tag string) string {
	switch tag {
	case "seq":
		return "list"
	case "map":
		return "group of settings"
	}
	return "value"
}

// keyAt is the mapping key whose value starts on line (and reads value
// when it is a scalar), or "".
func keyAt(n *yaml.Node, line int, value string) string {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Line == line && (v.Kind != yaml.ScalarNode || v.Value == value) {
				return k.Value
			}
		}
	}
	for _, c := range n.Content {
		if k := keyAt(c, line, value); k != "" {
			return k
		}
	}
	return ""
}

// fieldsByType maps each struct type reachable from t (by its name as
// yaml.v3 prints it, "config.Config") to its YAML keys.
func fieldsByType(t reflect.Type) map[string][]string {
	out := map[string][]string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return
		}
		if _, seen := out[t.String()]; seen {
			return
		}
		out[t.String()] = nil
		out[t.String()] = structKeys(t, walk)
	}
	walk(t)
	return out
}

// structKeys lists t's YAML keys (inline fields' included) and walks the
// fields' types.
func structKeys(t reflect.Type, walk func(reflect.Type)) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				keys = append(keys, structKeys(ft, walk)...)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, name)
		walk(f.Type)
	}
	return keys
}

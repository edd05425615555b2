package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/internal/lazyre"
)

// settingAtStart matches the setting a line of Validate's error starts
// with: a key, dotted for a nested one, and an item's index
// (hooks[0]).
var settingAtStart = lazyre.New(`^([a-z_]+(?:\.[a-z_]+)?)(?:\[(\d+)\])?`)

// Locate adds to err, a Validate error, the line of config.yaml at path
// where each setting it names is written: "confirm (line 4 of
// /…/config.yaml): …". A setting the file does not hold (the
// environment gave it) is left as it is, and so is err when path is ""
// or the file does not parse.
func Locate(path string, err error) error {
	if err == nil || path == "" {
		return err
	}
	data, rerr := readConfigFile(path)
	if rerr != nil {
		return err
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return err
	}
	lines := keyLines(doc.Content[0])
	text := err.Error()
	head := ""
	if i := strings.Index(text, "): "); strings.HasPrefix(text, "configuration (") && i > 0 {
		head, text = text[:i+3], text[i+3:]
	}
	parts := strings.Split(text, "\n")
	for i, p := range parts {
		parts[i] = locateLine(p, path, lines, settingAtStart())
	}
	return &located{text: head + strings.Join(parts, "\n"), err: err}
}

// located is a Validate error with the lines of its settings.
type located struct {
	text string
	err  error
}

func (l *located) Error() string { return l.text }
func (l *located) Unwrap() error { return l.err }

// locateLine adds the line of the setting p starts with, when known.
func locateLine(p, path string, lines map[string]int, re *regexp.Regexp) string {
	m := re.FindStringSubmatchIndex(p)
	if m == nil {
		return p
	}
	key := p[m[2]:m[3]]
	if m[4] >= 0 {
		key += "[" + p[m[4]:m[5]] + "]"
	}
	n, ok := lines[key]
	if !ok {
		return p
	}
	return fmt.Sprintf("%s (line %d of %s)%s", p[:m[1]], n, path, p[m[1]:])
}

// keyLines maps each key of a config file's top mapping to its line,
// with a nested mapping's keys dotted (web.searxng_url) and a list's
// items indexed (hooks[0]).
func keyLines(top *yaml.Node) map[string]int {
	out := map[string]int{}
	if top.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		out[k.Value] = k.Line
		switch v.Kind {
		case yaml.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				out[k.Value+"."+v.Content[j].Value] = v.Content[j].Line
			}
		case yaml.SequenceNode:
			for j, item := range v.Content {
				out[k.Value+"["+strconv.Itoa(j)+"]"] = item.Line
			}
		}
	}
	return out
}

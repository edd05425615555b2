package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/config"
)

// Config errors in the person's words (issue 42 item 5): an unknown
// setting with the closest one, a list written as one value with the
// example, and a syntax error on the line it is on, not the one before.
func TestConfigErrorsInThePersonsWords(t *testing.T) {
	for file, want := range map[string]string{
		"modle: anthropic/sonnet\n": "line 1: unknown setting `modle` — did you mean `model`?",
		"model: x\nhooks:\n  - events: [subagent:complete]\n    command: notify.sh\n": "line 4: `command` is a list, not a single value: write command: [\"notify.sh\"]",
		"model: x\nhooks:\n  - evnets: [subagent:complete]\n":                         "line 3: unknown setting `evnets` — did you mean `events`?",
		"model: x\nhooks:\n  - events: [subagent:complete\n    command: [n]\n":        "line 3: YAML syntax: did not find expected ',' or ']'",
		"model: x\n- a\n":                  "line 2: YAML syntax: did not find expected key",
		"model: x\naddr 127.0.0.1\n":       "line 2: YAML syntax: could not find expected ':'",
		"max_concurrent_subagents: many\n": "line 1: `max_concurrent_subagents` is a whole number, not `many`",
	} {
		root := t.TempDir()
		path := filepath.Join(root, config.FileName)
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(env(map[string]string{"AVA_DATA_ROOT": root}))
		if err == nil || !strings.Contains(err.Error(), "config "+path+" "+want) || strings.Contains(err.Error(), "config.Config") {
			t.Errorf("%q: %v\nwant %q", file, err, want)
		}
	}
}

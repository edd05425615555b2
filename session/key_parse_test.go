package session

import (
	"errors"
	"strings"
	"testing"
)

// TestParseKey: the one rule for what a person types for a session
// (issue 42 item 4).
func TestParseKey(t *testing.T) {
	for in, want := range map[string]string{
		"notes":                 "ava:cli:notes",
		"tour-1.b":              "ava:cli:tour-1.b",
		"S-7f3a2b":              "ava:subagent:S-7f3a2b",
		"s-7f":                  "ava:subagent:s-7f",
		"ava:web:abc":           "ava:web:abc",
		"ava:subagent:S-7f3a2b": "ava:subagent:S-7f3a2b",
		"legacy:Key_1":          "legacy:Key_1",
	} {
		got, err := ParseKey(in)
		if err != nil || got != want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, says := range map[string]string{
		"": "is empty", " ": "is empty",
		"S-":                               "a subagent ID is S-",
		"S-notes":                          "a subagent ID is S-",
		"my notes":                         "session name",
		"my_notes":                         "session name",
		".hidden":                          "session name",
		"ava:web:a b":                      "spaces",
		"ava:subagent:":                    "subagent ID is empty",
		strings.Repeat("n", MaxNewIDLen+1): "session name",
	} {
		_, err := ParseKey(in)
		if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseKey(%q) = %v; want ErrBadKey saying %q", in, err, says)
		}
	}
}

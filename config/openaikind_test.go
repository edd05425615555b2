package config_test

import (
	"strings"
	"testing"

	"github.com/avaagent/ava/config"
)

// TestOpenAIOwnAPI: openai_kind says what the openai endpoint is; unset,
// the base URL does (none, or api.openai.com, is OpenAI's own API); any
// other value is refused.
func TestOpenAIOwnAPI(t *testing.T) {
	for _, tc := range []struct {
		kind, base string
		want       bool
	}{
		{"", "", true},
		{"", "https://api.openai.com/v1", true},
		{"", "http://127.0.0.1:11434/v1", false},
		{"openai", "http://127.0.0.1:8080/v1", true},
		{"compatible", "", false},
	} {
		c := config.Config{OpenAIKind: tc.kind, OpenAI: config.Provider{BaseURL: tc.base}}
		if got := c.OpenAIOwnAPI(); got != tc.want {
			t.Errorf("kind %q base %q: OpenAIOwnAPI = %v, want %v", tc.kind, tc.base, got, tc.want)
		}
	}
	c := config.Default()
	c.DataRoot = t.TempDir()
	c.OpenAIKind = "azure"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "openai_kind (AVA_OPENAI_KIND)") {
		t.Errorf("Validate with openai_kind azure: %v", err)
	}
}

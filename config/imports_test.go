package config_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// configLeaves are the only Ava packages config may import, directly or
// not: leaves that start nothing (no pool, sandbox, store or tool).
var configLeaves = []string{
	"config", "confirm", "internal/closest", "internal/fserr", "internal/fsread", "internal/lazyre", "internal/yamlerr", "lifecycle",
	"llm", // prices and model names; llm's root imports only redact
	"hookspec", "mcpspec", "redact",
}

// TestConfigImportsOnlyLeaves keeps configuration data: reading it links
// no runtime package (mcpclient, sandbox, tool, store, ...).
func TestConfigImportsOnlyLeaves(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/avaagent/ava/config").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	checked := 0
	for _, path := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(path, "github.com/avaagent/ava/")
		if !ok {
			continue
		}
		checked++
		if !slices.Contains(configLeaves, rest) {
			t.Errorf("config imports %s: configuration is data; give the setting a plain value and let the package that runs it take it", path)
		}
	}
	if checked == 0 {
		t.Fatal("go list named no Ava package")
	}
}

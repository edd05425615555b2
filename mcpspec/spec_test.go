package mcpspec_test

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/mcpspec"
)

func TestSpecsYAML(t *testing.T) {
	var doc struct {
		List mcpspec.Specs `yaml:"list"`
		Map  mcpspec.Specs `yaml:"map"`
	}
	src := `
list:
  - shared
  - name: fs
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /tmp]
    env: {DEBUG: "1"}
    pass_env: [GITHUB_TOKEN]
map:
  web: {url: "http://127.0.0.1:8080/mcp"}
`
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.List) != 2 || !doc.List[0].IsRef() || doc.List[0].Name != "shared" || doc.List[1].Kind() != "stdio" ||
		doc.List[1].Args[2] != "/tmp" || doc.List[1].Env["DEBUG"] != "1" || doc.List[1].PassEnv[0] != "GITHUB_TOKEN" {
		t.Errorf("list: %+v", doc.List)
	}
	if len(doc.Map) != 1 || doc.Map[0].Name != "web" || doc.Map[0].Kind() != "url" {
		t.Errorf("map: %+v", doc.Map)
	}
	for _, bad := range []string{"list: [{name: x, comand: y}]", "list: 5", "map: {a: {name: b, url: 'http://127.0.0.1/'}}"} {
		if err := yaml.Unmarshal([]byte(bad), &doc); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	for _, c := range []struct {
		spec mcpspec.Spec
		want string
	}{
		{mcpspec.Spec{Name: "Bad Name", Command: "x"}, "name"},
		{mcpspec.Spec{Name: "a__b", Command: "x"}, "name"},
		{mcpspec.Spec{Name: "both", Command: "x", URL: "http://127.0.0.1/"}, "not both"},
		{mcpspec.Spec{Name: "none", Env: map[string]string{"A": "b"}}, "give a command"},
		{mcpspec.Spec{Name: "urlargs", URL: "http://127.0.0.1/", Args: []string{"x"}}, "for a command"},
		{mcpspec.Spec{Name: "envname", Command: "x", Env: map[string]string{"A=B": "c"}}, "variable name"},
		{mcpspec.Spec{Name: "urlnet", URL: "http://127.0.0.1/", Network: true}, "for a command"},
		{mcpspec.Spec{Name: "relcwd", Command: "x", Cwd: "here"}, "cwd"},
		{mcpspec.Spec{Name: "relpath", Command: "x", ReadOnlyPaths: []string{"lib"}}, "read_only_paths"},
		{mcpspec.Spec{Name: "root", Command: "x", WritePaths: []string{"/"}}, "whole machine"},
		{mcpspec.Spec{Name: "opennet", Command: "x", Sandbox: new(false), Network: true}, "for a sandboxed server"},
	} {
		err := c.spec.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "MCP server") {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	if err := (mcpspec.Spec{Name: "ok-1_x", Command: "x"}).Validate(nil); err != nil {
		t.Error(err)
	}
}

// The sandbox keys parse from YAML, and only the operator's settings
// are named by OperatorOnly.
func TestSpecSandboxKeys(t *testing.T) {
	var specs mcpspec.Specs
	src := "fs:\n  command: npx\n  network: true\n  read_only_paths: [/opt/x]\n  write_paths: [/srv/notes]\nlegacy:\n  command: /bin/x\n  sandbox: false\n  cwd: /srv/legacy\n"
	if err := yaml.Unmarshal([]byte(src), &specs); err != nil {
		t.Fatal(err)
	}
	fs, legacy := specs[0], specs[1]
	if !fs.Sandboxed() || !fs.Network || fs.ReadOnlyPaths[0] != "/opt/x" || fs.WritePaths[0] != "/srv/notes" || fs.IsRef() {
		t.Errorf("fs: %+v", fs)
	}
	if legacy.Sandboxed() || legacy.Cwd != "/srv/legacy" {
		t.Errorf("legacy: %+v", legacy)
	}
	for _, sp := range specs {
		if err := sp.Validate(nil); err != nil {
			t.Error(err)
		}
	}
	if got := strings.Join(fs.OperatorOnly(), ","); got != "read_only_paths,write_paths" {
		t.Errorf("fs: %s", got)
	}
	if got := strings.Join(legacy.OperatorOnly(), ","); got != "sandbox: false,cwd" {
		t.Errorf("legacy: %s", got)
	}
	if fs.Equal(legacy) || !fs.Equal(fs) {
		t.Error("Equal")
	}
}

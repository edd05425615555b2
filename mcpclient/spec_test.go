package mcpclient_test

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/mcpclient"
)

func TestSpecsYAML(t *testing.T) {
	var doc struct {
		List mcpclient.Specs `yaml:"list"`
		Map  mcpclient.Specs `yaml:"map"`
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
		spec mcpclient.Spec
		want string
	}{
		{mcpclient.Spec{Name: "Bad Name", Command: "x"}, "name"},
		{mcpclient.Spec{Name: "a__b", Command: "x"}, "name"},
		{mcpclient.Spec{Name: "both", Command: "x", URL: "http://127.0.0.1/"}, "not both"},
		{mcpclient.Spec{Name: "none", Env: map[string]string{"A": "b"}}, "give a command"},
		{mcpclient.Spec{Name: "urlargs", URL: "http://127.0.0.1/", Args: []string{"x"}}, "for a command"},
		{mcpclient.Spec{Name: "envname", Command: "x", Env: map[string]string{"A=B": "c"}}, "variable name"},
	} {
		err := c.spec.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "MCP server") {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	if err := (mcpclient.Spec{Name: "ok-1_x", Command: "x"}).Validate(nil); err != nil {
		t.Error(err)
	}
}

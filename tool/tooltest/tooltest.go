// Package tooltest holds checks every tool package's tests share.
package tooltest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/avaagent/ava/tool"
)

// CheckSet fails t unless tools register together under exactly names
// (sorted) and each has a description and an object JSON Schema.
func CheckSet(t testing.TB, tools []tool.Tool, names ...string) {
	t.Helper()
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Names(); !slices.Equal(got, names) {
		t.Fatalf("tools %v, want %v", got, names)
	}
	for _, tl := range reg.Tools() {
		var s map[string]any
		if err := json.Unmarshal(tl.Schema(), &s); err != nil || s["type"] != "object" || tl.Description() == "" {
			t.Errorf("%s: schema %s, err %v", tl.Name(), tl.Schema(), err)
		}
	}
}

package app_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
)

// TestEveryToolSchemaResolves resolves the schema of every tool an
// instance offers the orchestrator and its subagents: tools resolve
// their schema at their first call, so a schema that cannot validate
// must be found here rather than by a model.
func TestEveryToolSchemaResolves(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": dir, "AVA_WORKSPACE": dir}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	reg, err := in.OrchestratorTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, tl := range append(reg.Tools(), in.Tools.Tools()...) {
		c, ok := tl.(interface{ CheckSchema() error })
		if !ok {
			continue
		}
		checked++
		if err := c.CheckSchema(); err != nil {
			t.Errorf("%s: %v", tl.Name(), err)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d tools checked", checked)
	}
}

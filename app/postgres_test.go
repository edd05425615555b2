package app_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/tool"
)

// TestOpenOnPostgres opens an instance with AVA_DATABASE_URL set: its
// store is the PostgreSQL database, which gets its memories, its events
// and this process's instance record, and no SQLite file is made.
func TestOpenOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	root := t.TempDir()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_CONFIRM": "never", "AVA_DATABASE_URL": url}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := in.Close(); err != nil {
			t.Error(err)
		}
	})
	if _, ok := in.Store.(*postgres.Store); !ok {
		t.Fatalf("store is %T, want *postgres.Store", in.Store)
	}
	if _, err := os.Stat(filepath.Join(root, sqlite.FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an SQLite file was made next to the PostgreSQL store: %v", err)
	}
	ctx := context.Background()
	instances, err := in.Store.Instances(ctx)
	if err != nil || len(instances) != 1 {
		t.Fatalf("instances on postgres: %+v, %v; want this process", instances, err)
	}
	reg, err := in.OrchestratorTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ava := tool.Caller{AgentID: "ava", SessionKey: "ava:cli:pg"}
	if res := run(t, reg, "memory_write", ava, `{"content":"Ben prefers metric units","tags":["prefs"]}`); res.IsError {
		t.Fatal(res.Output)
	}
	if res := run(t, reg, "memory_read", ava, `{"query":"units"}`); res.IsError || !strings.Contains(res.Output, "metric units") {
		t.Fatalf("memory_read: %+v", res)
	}
	ev := event.New(event.UserMessage, event.TextContent{Text: "hello postgres"})
	ev.Session, ev.Agent = "ava:cli:pg", event.OrchestratorID
	published, err := in.Hub.Publish(ev)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := in.Store.ReadEvents(ctx, "ava:cli:pg", 0, 0)
	if err != nil || len(evs) != 1 || evs[0].Seq != published.Seq {
		t.Fatalf("events on postgres: %+v, %v", evs, err)
	}
}

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
	"github.com/avaagent/ava/audit"
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
	// Another process (its own pool, another data root) stores an event:
	// the logs of this one are the cluster's, read from the database.
	other, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	far := event.New(event.Error, event.ErrorContent{Error: "failed on another machine"})
	far.Seq, far.Session, far.Agent, far.Time = 1, "ava:subagent:S-00beef", "S-00beef", published.Time
	if err := other.AppendEvents(ctx, []event.Event{far}); err != nil {
		t.Fatal(err)
	}
	if !in.LogReader(audit.ReaderOptions{}).Stored() {
		t.Error("the log reader of a PostgreSQL instance reads files")
	}
	res := run(t, reg, "read_ava_logs", ava, `{}`)
	if res.IsError || !strings.Contains(res.Output, "hello postgres") || !strings.Contains(res.Output, "S-00beef Error: failed on another machine") {
		t.Fatalf("read_ava_logs on postgres: %+v", res)
	}
}

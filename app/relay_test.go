package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// openOn opens an instance with its own data root on the database at
// url, closed when t ends.
func openOn(t *testing.T, url string) *app.Instance {
	t.Helper()
	return openAt(t, t.TempDir(), url)
}

// TestInstancesRelayEvents opens two instances on one PostgreSQL
// database: a live reader of one sees what the other publishes.
func TestInstancesRelayEvents(t *testing.T) {
	url := pgtest.URL(t)
	a, b := openOn(t, url), openOn(t, url)
	const s = "ava:cli:relayed"
	sub := b.Hub.Follow(s, 0)
	defer sub.Close()
	ev := event.New(event.UserMessage, event.TextContent{Text: "from a"})
	ev.Session, ev.Agent = s, event.OrchestratorID
	if _, err := a.Hub.Publish(ev); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evs, err := sub.Next(ctx)
	if err != nil || len(evs) != 1 || evs[0].Seq != 1 || evs[0].Type != event.UserMessage {
		t.Fatalf("b's reader got %+v, %v", evs, err)
	}
}

// TestInstancesOnOneDataRootSeeEachOthersEvents opens two instances on
// one SQLite data root (two daemons sharing it): a live reader of one
// sees what the other stores, without anything local to trigger it.
func TestInstancesOnOneDataRootSeeEachOthersEvents(t *testing.T) {
	root := t.TempDir()
	a, b := openAt(t, root, ""), openAt(t, root, "")
	const s = "ava:cli:shared"
	sub := b.Hub.Follow(s, 0)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 1; i <= 3; i++ {
		ev := event.New(event.UserMessage, event.TextContent{Text: "from a"})
		ev.Session, ev.Agent = s, event.OrchestratorID
		if _, err := a.Hub.Publish(ev); err != nil {
			t.Fatal(err)
		}
		evs, err := sub.Next(ctx)
		if err != nil || len(evs) != 1 || evs[0].Seq != uint64(i) || evs[0].Type != event.UserMessage {
			t.Fatalf("event %d: b's reader got %+v, %v", i, evs, err)
		}
	}
}

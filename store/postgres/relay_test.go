package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// relayWait bounds every wait of these tests: generous, for a loaded
// machine; nothing is asserted about how long anything takes.
const relayWait = 20 * time.Second

// process is one Ava process of a test: its own store (pool) on the
// shared database, its hub, and its relay running.
type process struct {
	store *postgres.Store
	hub   *event.Hub
	relay *postgres.Relay
}

// startProcess opens a process on the database at url; it is stopped
// when t ends.
func startProcess(t *testing.T, url string) *process {
	t.Helper()
	p := &process{store: openAt(t, url)}
	p.hub = event.NewHub(p.store)
	p.relay = postgres.NewRelay(p.store, p.hub, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.relay.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return p
}

// twoProcesses opens two processes on one new database.
func twoProcesses(t *testing.T) (a, b *process, url string) {
	url = pgtest.URL(t)
	return startProcess(t, url), startProcess(t, url), url
}

// followHub is a Follow subscription closed when t ends.
func followHub(t *testing.T, h *event.Hub, session string) *event.Subscription {
	sub := h.Follow(session, 0)
	t.Cleanup(sub.Close)
	return sub
}

// readUntil reads sub until pred holds for what it has read.
func readUntil(t *testing.T, sub *event.Subscription, what string, pred func([]event.Event) bool) []event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), relayWait)
	defer cancel()
	var got []event.Event
	for !pred(got) {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s (after #%d, %d events read): %v", what, sub.Cursor(), len(got), err)
		}
		got = append(got, evs...)
	}
	return got
}

// readKept reads sub until it has the kept event numbered last.
func readKept(t *testing.T, sub *event.Subscription, last uint64) []event.Event {
	t.Helper()
	return readUntil(t, sub, fmt.Sprintf("#%d", last), func([]event.Event) bool { return sub.Cursor() >= last })
}

// wantKept fails unless the kept events of evs are numbered 1..last.
func wantKept(t *testing.T, evs []event.Event, last uint64) {
	t.Helper()
	next := uint64(1)
	for _, ev := range evs {
		if ev.Seq == 0 {
			continue
		}
		if ev.Seq != next {
			t.Fatalf("got #%d, want #%d", ev.Seq, next)
		}
		next++
	}
	if next != last+1 {
		t.Fatalf("ended at #%d, want #%d", next-1, last)
	}
}

func publish(t *testing.T, h *event.Hub, session string, typ event.Type, text string) {
	if _, err := h.Publish(event.Event{Session: session, Agent: "ava", Type: typ,
		Content: event.New(typ, event.TextContent{Text: text}).Content}); err != nil {
		t.Error(err)
	}
}

func textOf(ev event.Event) string {
	var c event.TextContent
	_ = ev.Decode(&c)
	return c.Text
}

// hasText reports whether evs hold a live-only event with text.
func hasText(evs []event.Event, text string) bool {
	for _, ev := range evs {
		if ev.Seq == 0 && textOf(ev) == text {
			return true
		}
	}
	return false
}

// warmUp waits until live-only events go from a to b: both relays are
// listening.
func warmUp(t *testing.T, a, b *process) {
	t.Helper()
	session := "ava:cli:warmup-" + b.relay.Origin()
	sub := followHub(t, b.hub, session)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for {
			publish(t, a.hub, session, event.Activity, "ping")
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	readUntil(t, sub, "a live event from the other process", func(evs []event.Event) bool { return hasText(evs, "ping") })
}

// TestRelayFollowsAnotherProcess: a subscriber on one process sees the
// events another publishes, live, in order, once each.
func TestRelayFollowsAnotherProcess(t *testing.T) {
	a, b, _ := twoProcesses(t)
	const s = "ava:cli:relay"
	sub := followHub(t, b.hub, s)
	for i := 1; i <= 50; i++ {
		publish(t, a.hub, s, event.UserMessage, fmt.Sprint(i))
	}
	wantKept(t, readKept(t, sub, 50), 50)
	// The journal stays in memory between bursts: the next ones come
	// the same way.
	for i := 51; i <= 60; i++ {
		publish(t, a.hub, s, event.UserMessage, fmt.Sprint(i))
	}
	got := readKept(t, sub, 60)
	if len(got) != 10 || got[0].Seq != 51 {
		t.Fatalf("second burst: %d events from #%d", len(got), got[0].Seq)
	}
}

// TestRelayBothPublish: two processes publishing to one session at
// once; each one's subscriber sees every number once, in order.
func TestRelayBothPublish(t *testing.T) {
	a, b, _ := twoProcesses(t)
	const s, each = "ava:cli:both", 200
	subs := []*event.Subscription{followHub(t, a.hub, s), followHub(t, b.hub, s)}
	var wg sync.WaitGroup
	for _, p := range []*process{a, b} {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				publish(t, p.hub, s, event.ToolCall, "x")
			}
		})
	}
	results := make([][]event.Event, len(subs))
	var rg sync.WaitGroup
	for i, sub := range subs {
		rg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), relayWait)
			defer cancel()
			for sub.Cursor() < 2*each {
				evs, err := sub.Next(ctx)
				if err != nil {
					t.Errorf("subscriber %d after #%d: %v", i, sub.Cursor(), err)
					return
				}
				results[i] = append(results[i], evs...)
			}
		})
	}
	wg.Wait()
	rg.Wait()
	for _, got := range results {
		wantKept(t, got, 2*each)
	}
}

// TestRelayLiveEvents: streamed text published on one process reaches
// the other's subscribers, in order, and not its own twice.
func TestRelayLiveEvents(t *testing.T) {
	a, b, _ := twoProcesses(t)
	warmUp(t, a, b)
	warmUp(t, b, a)
	const s = "ava:cli:stream"
	subA, subB := followHub(t, a.hub, s), followHub(t, b.hub, s)
	var want []string
	for i := 0; i < 30; i++ {
		want = append(want, fmt.Sprintf("piece-%d ", i))
		publish(t, a.hub, s, event.TextDelta, want[i])
	}
	texts := func(evs []event.Event) []string {
		var out []string
		for _, ev := range evs {
			if ev.Type == event.TextDelta {
				out = append(out, textOf(ev))
			}
		}
		return out
	}
	got := readUntil(t, subB, "the streamed text", func(evs []event.Event) bool { return len(texts(evs)) >= len(want) })
	if strings.Join(texts(got), "") != strings.Join(want, "") {
		t.Fatalf("b got %q, want %q", texts(got), want)
	}
	// Notifications reach every listener in the order they were sent:
	// once a's subscriber has b's marker, a's relay has had its own
	// stream back, and must have ignored it.
	publish(t, b.hub, s, event.Activity, "marker")
	gotA := readUntil(t, subA, "the marker", func(evs []event.Event) bool { return hasText(evs, "marker") })
	if strings.Join(texts(gotA), "") != strings.Join(want, "") {
		t.Fatalf("a's own subscriber got %q, want its stream once: %q", texts(gotA), want)
	}
}

// TestRelayCatchesUpAfterReconnect: events stored while the listening
// connections are down reach the subscriber once they are back.
func TestRelayCatchesUpAfterReconnect(t *testing.T) {
	a, b, url := twoProcesses(t)
	const s = "ava:cli:reconnect"
	sub := followHub(t, b.hub, s)
	publish(t, a.hub, s, event.UserMessage, "before")
	readKept(t, sub, 1)

	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := cfg.Database
	cfg.Database = "postgres" // connections to db are refused for a while
	admin, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Keep the listeners out while events are published: their
	// notifications are lost for sure.
	exec(`ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` ALLOW_CONNECTIONS false`)
	defer exec(`ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` ALLOW_CONNECTIONS true`)
	killListeners(t, admin, db)
	for i := 2; i <= 5; i++ {
		publish(t, a.hub, s, event.UserMessage, "meanwhile")
	}
	exec(`ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` ALLOW_CONNECTIONS true`)
	got := readKept(t, sub, 5)
	if len(got) != 4 || got[0].Seq != 2 {
		t.Fatalf("after reconnecting: %d events from #%d", len(got), got[0].Seq)
	}
}

// killListeners ends the listening connections to database db and waits
// until they are gone.
func killListeners(t *testing.T, admin *pgx.Conn, db string) {
	t.Helper()
	deadline := time.Now().Add(relayWait)
	for killed := false; ; killed = true {
		var n int
		err := admin.QueryRow(context.Background(), `
			SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND query LIKE 'LISTEN%'`, db).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && !killed {
			t.Fatal("no listening connection to kill")
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("listeners still there")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

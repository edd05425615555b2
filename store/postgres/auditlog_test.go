package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// logsDay is the day of the tests' events.
var logsDay = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

func logsAt(h, m, s, ms int) time.Time {
	return logsDay.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(ms)*time.Millisecond)
}

// machine is one process of a cluster: its own pool on the shared
// database, its own data root with its audit log, and a hub over both,
// as app.Open builds them.
type machine struct {
	store *postgres.Store
	root  string
	audit *audit.Writer
	hub   *event.Hub
}

func newMachine(t *testing.T, url string) *machine {
	t.Helper()
	m := &machine{store: openAt(t, url), root: t.TempDir()}
	w, err := audit.NewWriter(m.root, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	m.audit, m.hub = w, event.NewHub(m.store, w)
	return m
}

// publish publishes an event of agent in session at.
func (m *machine) publish(t *testing.T, at time.Time, session, agent string, typ event.Type, c any) {
	t.Helper()
	ev := event.New(typ, c)
	ev.Time, ev.Session, ev.Agent = at, session, agent
	if _, err := m.hub.Publish(ev); err != nil {
		t.Fatal(err)
	}
	if err := m.audit.Sync(); err != nil {
		t.Fatal(err)
	}
}

// cluster is two machines on one database with events on both, and a
// reader of the database.
func cluster(t *testing.T) (a, b *machine, r *audit.Reader) {
	t.Helper()
	url := pgtest.URL(t)
	a, b = newMachine(t, url), newMachine(t, url)
	a.publish(t, logsAt(13, 0, 0, 0), "ava:cli:a", "ava", event.UserMessage, event.TextContent{Text: "Research Pricing"})
	b.publish(t, logsAt(13, 0, 0, 0), "ava:cli:b", "ava", event.UserMessage, event.TextContent{Text: "hello from b"})
	a.publish(t, logsAt(14, 5, 29, 0), "ava:cli:a", "ava", event.SubagentSpawn, event.SubagentSpawnContent{SubagentID: "S-7f3a2b", Role: "web_crawler", Task: "pricing"})
	b.publish(t, logsAt(14, 5, 30, 0), "ava:subagent:S-7f3a2b", "S-7f3a2b", event.ToolCall, event.ToolCallContent{Name: "web_search", Args: json.RawMessage(`{"query":"otter.ai pricing"}`)})
	b.publish(t, logsAt(14, 5, 30, 500), "ava:subagent:S-7f3a2b", "S-7f3a2b", event.SessionState, map[string]string{"state": "busy"}) // kept, not audited
	a.publish(t, logsAt(14, 6, 0, 0), "ava:subagent:S-7f3e00", "S-7f3e00", event.Error, event.ErrorContent{Error: "fetch failed"})
	b.publish(t, logsAt(14, 7, 45, 0), "ava:cli:b", "ava", event.AssistantMessage, event.TextContent{Text: "done"})
	return a, b, audit.NewReader(t.TempDir(), audit.ReaderOptions{Events: openAt(t, url)})
}

// texts are the entries' types and sessions, "Type@session".
func texts(evs []event.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Type)+"@"+ev.Session)
	}
	return out
}

// TestLogsReadTheCluster queries the events two machines stored: one
// query shows both, by time, and every filter of audit.Query applies.
func TestLogsReadTheCluster(t *testing.T) {
	_, _, r := cluster(t)
	ctx := context.Background()
	all := []string{"UserMessage@ava:cli:a", "UserMessage@ava:cli:b", "SubagentSpawn@ava:cli:a", "ToolCall@ava:subagent:S-7f3a2b",
		"Error@ava:subagent:S-7f3e00", "AssistantMessage@ava:cli:b"}
	for _, c := range []struct {
		name string
		q    audit.Query
		want []string
	}{
		{"all", audit.Query{}, all},
		{"last 2", audit.Query{Limit: 2}, all[4:]},
		{"last 100", audit.Query{Limit: 100}, all},
		{"types", audit.Query{Types: []event.Type{event.Error, event.UserMessage}}, []string{all[0], all[1], all[4]}},
		{"session", audit.Query{Session: "ava:cli:b"}, []string{all[1], all[5]}},
		{"agent ava", audit.Query{Agent: "ava"}, []string{all[0], all[1], all[2], all[5]}},
		{"subagent", audit.Query{Agent: "S-7f3a2b"}, []string{all[3]}},
		{"since", audit.Query{Since: logsAt(14, 5, 30, 0)}, all[3:]},
		{"until", audit.Query{Until: logsAt(14, 5, 29, 0)}, all[:3]},
		{"since and until, last 1", audit.Query{Since: logsAt(13, 0, 0, 0), Until: logsAt(14, 6, 0, 0), Limit: 1}, all[4:5]},
		{"search, case and JSON", audit.Query{Search: "research pricing"}, all[:1]},
		{"search in content", audit.Query{Search: "OTTER.AI"}, all[3:4]},
		{"search and last", audit.Query{Search: "ava:cli:", Limit: 3}, []string{all[1], all[2], all[5]}},
	} {
		evs, skips, err := r.Query(ctx, c.q)
		if err != nil || len(skips) > 0 {
			t.Fatalf("%s: %v, skips %v", c.name, err, skips)
		}
		if got := texts(evs); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestLogsStoredEntriesAreTheFileEntries compares, for the events of one
// machine, what its audit files hold with what the database holds: the
// same lines, byte for byte, and the same events.
func TestLogsStoredEntriesAreTheFileEntries(t *testing.T) {
	a, _, r := cluster(t)
	ctx := context.Background()
	files := audit.NewReader(a.root, audit.ReaderOptions{})
	mine := func(e audit.Entry) bool {
		return e.Event.Session == "ava:cli:a" || e.Event.Session == "ava:subagent:S-7f3e00"
	}
	for _, q := range []audit.Query{{}, {Agent: "S-7f3e00"}, {Session: "ava:cli:a", Limit: 1}, {Search: "pricing"}} {
		want, _, err := files.QueryEntries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		stored, _, err := r.QueryEntries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.DeleteFunc(stored, func(e audit.Entry) bool { return !mine(e) })
		if len(got) != len(want) {
			t.Fatalf("%+v: %d stored entries of machine a, %d in its files", q, len(got), len(want))
		}
		for i := range want {
			if string(got[i].Raw) != string(want[i].Raw) {
				t.Errorf("%+v: stored line\n%s\nfile line\n%s", q, got[i].Raw, want[i].Raw)
			}
			if audit.FormatLine(got[i].Event, audit.FormatOptions{ShowAgent: true}) != audit.FormatLine(want[i].Event, audit.FormatOptions{ShowAgent: true}) {
				t.Errorf("%+v: stored and file entries format differently", q)
			}
		}
	}
}

// TestLogsResolveSubagentInTheCluster resolves prefixes among the
// subagents with stored events, and a subagent with none is not found.
func TestLogsResolveSubagentInTheCluster(t *testing.T) {
	_, _, r := cluster(t)
	ctx := context.Background()
	if id, err := r.ResolveSubagentContext(ctx, "7f3a"); id != "S-7f3a2b" || err != nil {
		t.Errorf("7f3a: %q, %v", id, err)
	}
	if _, err := r.ResolveSubagentContext(ctx, "S-7f3"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("S-7f3: %v, want ambiguous", err)
	}
	if _, err := r.ResolveSubagentContext(ctx, "S-0"); err == nil || !strings.Contains(err.Error(), "no subagent trace matches") {
		t.Errorf("S-0: %v", err)
	}
	if _, _, err := r.Query(ctx, audit.Query{Agent: "S-000000"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("query of an unknown subagent: %v, want fs.ErrNotExist", err)
	}
}

// follower follows r with q, collecting what it delivers.
type follower struct {
	mu     sync.Mutex
	got    []string
	cancel context.CancelFunc
	done   chan error
}

func follow(r *audit.Reader, q audit.Query) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, done: make(chan error, 1)}
	go func() {
		f.done <- r.Follow(ctx, q, func(ev event.Event) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.got = append(f.got, string(ev.Type)+"@"+ev.Session)
			return nil
		})
	}()
	return f
}

func (f *follower) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// waitFor waits (generously) until the follower has delivered n entries.
func (f *follower) waitFor(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(f.seen()) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return f.seen()
}

func (f *follower) stop(t *testing.T) {
	t.Helper()
	f.cancel()
	if err := <-f.done; err != nil {
		t.Errorf("follow ended with %v", err)
	}
}

// TestLogsFollowTheCluster follows the database: the history first,
// then the events either machine stores later, filtered, each once.
func TestLogsFollowTheCluster(t *testing.T) {
	a, b, r := cluster(t)
	f := follow(r, audit.Query{Limit: 1, Since: logsDay, Types: []event.Type{event.AssistantMessage, event.Error}})
	defer f.stop(t)
	if got := f.waitFor(t, 1); !slices.Equal(got, []string{"AssistantMessage@ava:cli:b"}) {
		t.Fatalf("history %q", got)
	}
	a.publish(t, logsAt(15, 0, 0, 0), "ava:cli:a", "ava", event.UserMessage, event.TextContent{Text: "filtered out"})
	a.publish(t, logsAt(15, 0, 1, 0), "ava:cli:a", "ava", event.AssistantMessage, event.TextContent{Text: "live a"})
	b.publish(t, logsAt(15, 0, 2, 0), "ava:subagent:S-7f3a2b", "S-7f3a2b", event.Error, event.ErrorContent{Error: "live b"})
	want := []string{"AssistantMessage@ava:cli:b", "AssistantMessage@ava:cli:a", "Error@ava:subagent:S-7f3a2b"}
	if got := f.waitFor(t, 3); !slices.Equal(got, want) {
		t.Fatalf("followed %q, want %q", got, want)
	}
	b.publish(t, logsAt(15, 0, 3, 0), "ava:cli:b", "ava", event.AssistantMessage, event.TextContent{Text: "last"})
	if got := f.waitFor(t, 4); len(got) != 4 || got[3] != "AssistantMessage@ava:cli:b" {
		t.Fatalf("followed %q", got)
	}
}

// TestLogsFollowSeesALateCommit: an event whose transaction began before
// a follower's cursor moved past later events, and committed after, is
// still delivered, once. An id cursor would skip it.
func TestLogsFollowSeesALateCommit(t *testing.T) {
	url := pgtest.URL(t)
	a := newMachine(t, url)
	r := audit.NewReader(t.TempDir(), audit.ReaderOptions{Events: a.store, PollInterval: 10 * time.Millisecond})
	f := follow(r, audit.Query{})
	defer f.stop(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	late := event.New(event.Error, event.ErrorContent{Error: "late"})
	late.Seq, late.Time, late.Session, late.Agent = 1, logsAt(16, 0, 0, 0), "ava:cli:late", "ava"
	line, _ := json.Marshal(late)
	if _, err := tx.Exec(ctx, `INSERT INTO events (session_key, seq, type, agent, time, line) VALUES ($1, 1, $2, 'ava', $3, $4)`,
		late.Session, string(late.Type), late.Time.UnixNano(), string(line)); err != nil {
		t.Fatal(err)
	}
	a.publish(t, logsAt(16, 0, 1, 0), "ava:cli:a", "ava", event.UserMessage, event.TextContent{Text: "early commit"})
	time.Sleep(200 * time.Millisecond) // some polls while the first transaction is open
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := f.waitFor(t, 2)
	slices.Sort(got)
	if want := []string{"Error@ava:cli:late", "UserMessage@ava:cli:a"}; !slices.Equal(got, want) {
		t.Fatalf("followed %q, want %q", got, want)
	}
	a.publish(t, logsAt(16, 0, 2, 0), "ava:cli:a", "ava", event.UserMessage, event.TextContent{Text: "after"})
	if got := f.waitFor(t, 3); len(got) != 3 {
		t.Fatalf("followed %q, want three entries, none twice", got)
	}
}

// TestOpenReadOnly: a ReadOnly store does not migrate (an empty database
// stays empty and is refused), and writes through it fail.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	empty := pgtest.EmptyURL(t)
	if s, err := postgres.Open(ctx, empty, postgres.Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "not migrated") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("read-only open of an empty database: %v, want refused", err)
	}
	conn, err := pgx.Connect(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("tables after a read-only open: %d, %v", tables, err)
	}
	url := pgtest.URL(t)
	s, err := postgres.Open(ctx, url, postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := event.New(event.Error, event.ErrorContent{Error: "x"})
	ev.Seq, ev.Time, ev.Session, ev.Agent = 1, logsDay, "ava:cli:ro", "ava"
	if err := s.AppendEvents(ctx, []event.Event{ev}); err == nil {
		t.Fatal("a read-only store stored an event")
	}
}

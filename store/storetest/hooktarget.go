package storetest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/hooks"
	"github.com/avaagent/ava/hookspec"
	"github.com/avaagent/ava/store"
)

// HookTargetSecret is a webhook's path and query that are its credential
// (Slack's /services/T…/B…/…, a ?token=): a store must keep no part of
// it once hook_deliveries has no target column.
const HookTargetSecret = "/services/T0/B0/SECRETpath?token=tok-SECRET&api_key=key-SECRET"

// LegacyHookRow is a hook delivery as a store kept it before the
// migration that dropped hook_deliveries.target (SQLite 00014,
// PostgreSQL 00016): Target was the webhook's whole URL, and an
// attempt's error quoted it.
type LegacyHookRow struct {
	HookID, Kind, Target, Event, SessionKey string
	Seq                                     int64
	Body, Status                            string
	Attempts, MaxAttempts                   int
	LastError                               string
}

// HookTargetMigration tests that migration on a backend: a webhook on
// loopback whose URL's path and query are its credential, and the rows
// an older store held for it. The backend's test inserts Rows into a
// store at the version before the migration, opens it (which migrates),
// closes and opens it again (a restart), and calls Check.
type HookTargetMigration struct {
	// Spec is the hook as the configuration still has it.
	Spec hookspec.Spec
	// Rows are the older store's rows: a pending delivery, a failed one
	// due now whose error quoted the URL twice (ours and net/http's),
	// two dead ones of the same hook (an error quoting the URL, one
	// holding its path some other way), and a command hook's.
	Rows []LegacyHookRow

	srv *httptest.Server
	mu  sync.Mutex
	got []string // the request URIs the webhook was asked at
}

// NewHookTargetMigration starts the webhook (closed when t ends) and
// returns the rows to insert.
func NewHookTargetMigration(t *testing.T) *HookTargetMigration {
	t.Helper()
	m := &HookTargetMigration{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		m.mu.Lock()
		m.got = append(m.got, r.URL.RequestURI())
		m.mu.Unlock()
	}))
	t.Cleanup(m.srv.Close)
	url := m.srv.URL + HookTargetSecret
	m.Spec = hookspec.Spec{Events: []string{hookspec.SubagentComplete}, URL: url, Attempts: 3}
	id := m.Spec.ID()
	body := `{"type":"agent_event","eventType":"subagent:complete"}`
	m.Rows = []LegacyHookRow{
		{HookID: id, Kind: "url", Target: url, Event: "subagent:complete", SessionKey: "ava:cli:m", Seq: 1, Body: body,
			Status: store.HookPending, MaxAttempts: 3},
		{HookID: id, Kind: "url", Target: url, Event: "subagent:complete", SessionKey: "ava:cli:m", Seq: 2, Body: body,
			Status: store.HookFailed, Attempts: 1, MaxAttempts: 3,
			LastError: "webhook " + url + `: Post "` + url + `": dial tcp 127.0.0.1:1: connect: connection refused`},
		{HookID: id, Kind: "url", Target: url, Event: "subagent:complete", SessionKey: "ava:cli:m", Seq: 3, Body: body,
			Status: store.HookDead, Attempts: 3, MaxAttempts: 3,
			LastError: "webhook " + url + ": answered 503 Service Unavailable: down"},
		{HookID: id, Kind: "url", Target: url, Event: "subagent:complete", SessionKey: "ava:cli:m", Seq: 5, Body: body,
			Status: store.HookDead, Attempts: 3, MaxAttempts: 3,
			LastError: "refused POST " + HookTargetSecret + " (written some other way)"},
		{HookID: "h-000000000c0d", Kind: "command", Target: "/bin/true", Event: "session:idle", SessionKey: "ava:cli:m", Seq: 4,
			Body: `{}`, Status: store.HookPending, MaxAttempts: 1},
	}
	return m
}

// Check verifies the migrated store s (opened again since): no
// delivery holds any part of the URL's path or query, an error that
// quoted the URL names it by scheme and host ("http://127.0.0.1:…/…"),
// and the pending and failed deliveries are delivered, by a dispatcher
// that has the hook in its configuration, to the configured URL.
func (m *HookTargetMigration) Check(t *testing.T, s store.Store) {
	t.Helper()
	ds, err := s.HookDeliveries(ctx(t), store.HookFilter{})
	must(t, err)
	if len(ds) != len(m.Rows) {
		t.Fatalf("after the migration %d deliveries, want %d: %+v", len(ds), len(m.Rows), ds)
	}
	shown := m.srv.URL + "/…"
	want := map[uint64]string{ // the errors, by the event's number
		1: "",
		2: "webhook " + shown + `: Post "` + shown + `": dial tcp 127.0.0.1:1: connect: connection refused`,
		3: "webhook " + shown + ": answered 503 Service Unavailable: down",
		4: "",
		5: "an earlier attempt failed (its error named the webhook's URL and is not kept)",
	}
	for _, d := range ds {
		for _, v := range []string{d.HookID, d.Kind, d.Event, d.SessionKey, d.Body, d.Host, d.LastError} {
			if strings.Contains(v, "SECRET") || strings.Contains(v, "/services") {
				t.Errorf("delivery %d still holds the webhook's URL: %q", d.ID, v)
			}
		}
		if d.LastError != want[d.Seq] {
			t.Errorf("delivery #%d's error after the migration:\n got %q\nwant %q", d.Seq, d.LastError, want[d.Seq])
		}
	}

	d := hooks.NewDispatcher(hooks.Options{Store: s, Hooks: map[string]hookspec.Spec{m.Spec.ID(): m.Spec}, Owner: "after-restart",
		Sender: hooks.NewSender(nil, "ava/test")})
	dctx, cancel := context.WithTimeout(ctx(t), 30*time.Second)
	defer cancel()
	if n := d.DeliverNow(dctx, nil); n != 2 {
		t.Errorf("attempted %d deliveries after the migration, want the pending and the failed one", n)
	}
	m.mu.Lock()
	got := append([]string(nil), m.got...)
	m.mu.Unlock()
	if len(got) != 2 || got[0] != HookTargetSecret || got[1] != HookTargetSecret {
		t.Errorf("the webhook was asked at %q, want twice at %q (the configured URL)", got, HookTargetSecret)
	}
	ds, err = s.HookDeliveries(ctx(t), store.HookFilter{})
	must(t, err)
	wantStatus := map[uint64]string{1: store.HookDelivered, 2: store.HookDelivered, 3: store.HookDead, 4: store.HookPending,
		5: store.HookDead}
	for _, d := range ds {
		if d.Status != wantStatus[d.Seq] {
			t.Errorf("delivery #%d is %s after the dispatcher ran, want %s", d.Seq, d.Status, wantStatus[d.Seq])
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// clusterMachine is one process of a cluster as app.Open builds it: a
// pool on the shared database, its own data root and audit log, and a
// hub over both.
type clusterMachine struct {
	root  string
	audit *audit.Writer
	hub   *event.Hub
}

func newClusterMachine(t *testing.T, url string) *clusterMachine {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m := &clusterMachine{root: t.TempDir()}
	if m.audit, err = audit.NewWriter(m.root, audit.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.audit.Close() })
	m.hub = event.NewHub(s, m.audit)
	return m
}

func (m *clusterMachine) publish(t *testing.T, ev event.Event) {
	t.Helper()
	if _, err := m.hub.Publish(ev); err != nil {
		t.Fatal(err)
	}
	if err := m.audit.Sync(); err != nil {
		t.Fatal(err)
	}
}

// newClusterApp is newLogsTestApp with AVA_DATABASE_URL set to url.
func newClusterApp(root, url string) (*App, *logsBuffer, *logsBuffer) {
	app, out, errb := newLogsTestApp(root)
	app.Getenv = func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_DATABASE_URL": url}[k]
	}
	return app, out, errb
}

// logsCluster is two machines with events on one database.
func logsCluster(t *testing.T) (url string, a, b *clusterMachine) {
	t.Helper()
	url = pgtest.URL(t)
	a, b = newClusterMachine(t, url), newClusterMachine(t, url)
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 20, h, m, s, 0, time.UTC) }
	a.publish(t, logsEvent(at(13, 0, 0), "ava", event.UserMessage, event.TextContent{Text: "question on a"}))
	b.publish(t, logsEvent(at(14, 5, 30), "S-7f3a2b", event.ToolCall, event.ToolCallContent{Name: "web_search", Args: json.RawMessage(`{"query":"on b"}`)}))
	a.publish(t, logsEvent(at(14, 6, 0), "ava", event.AssistantMessage, event.TextContent{Text: "answer on a"}))
	return url, a, b
}

// TestLogsCommandShowsTheCluster: with AVA_DATABASE_URL, ava logs on one
// machine shows the events of both, with every output form; without it,
// only its own files.
func TestLogsCommandShowsTheCluster(t *testing.T) {
	url, a, _ := logsCluster(t)
	ctx := context.Background()
	want := "[13:00:00] ava      UserMessage question on a\n" +
		`[14:05:30] S-7f3a2b ToolCall web_search {"query": "on b"}` + "\n" +
		"[14:06:00] ava      AssistantMessage answer on a\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, want},
		{[]string{"--last", "1"}, "[14:06:00] ava      AssistantMessage answer on a\n"},
		{[]string{"S-7f3a"}, `[14:05:30] ToolCall web_search {"query": "on b"}` + "\n"},
		{[]string{"--agent", "ava", "--type", "usermessage"}, "[13:00:00] UserMessage question on a\n"},
		{[]string{"--search", "ON B", "--since", "2026-11-20 14:00", "--until", "2026-11-20 14:05:30"}, `[14:05:30] S-7f3a2b ToolCall web_search {"query": "on b"}` + "\n"},
		{[]string{"--session", "ava:subagent:S-7f3a2b"}, `[14:05:30] S-7f3a2b ToolCall web_search {"query": "on b"}` + "\n"},
	} {
		app, out, errb := newClusterApp(a.root, url)
		if err := runLogsCmd(ctx, app, c.args...); err != nil {
			t.Fatalf("%q: %v (stderr %q)", c.args, err, errb.String())
		}
		if out.String() != c.want {
			t.Errorf("ava logs %q:\n%s\nwant\n%s", c.args, out.String(), c.want)
		}
	}
	app, out, _ := newClusterApp(a.root, url)
	if err := runLogsCmd(ctx, app, "--json", "--type", "ToolCall"); err != nil {
		t.Fatal(err)
	}
	var ev event.Event
	if err := json.Unmarshal([]byte(out.String()), &ev); err != nil || ev.Agent != "S-7f3a2b" || ev.Seq != 1 {
		t.Errorf("--json %q: %+v, %v", out.String(), ev, err)
	}
	app, out, _ = newLogsTestApp(a.root)
	if err := runLogsCmd(ctx, app); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "on b") || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("without AVA_DATABASE_URL, ava logs shows\n%s\nwant machine a's files only", out.String())
	}
}

// TestLogsCommandFollowsTheCluster: ava logs -f on one machine shows an
// event another machine stores after it started.
func TestLogsCommandFollowsTheCluster(t *testing.T) {
	url, a, b := logsCluster(t)
	app, out, errb := newClusterApp(a.root, url)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runLogsCmd(ctx, app, "-f", "--since", "2026-11-20", "--type", "Error") }()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				cancel()
				<-done
				t.Fatalf("follow output %q never showed %q (stderr %q)", out.String(), want, errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	b.publish(t, logsEvent(logsNow, "S-7f3a2b", event.Error, event.ErrorContent{Error: "live failure on b"}))
	waitFor("[14:10:00] S-7f3a2b Error: live failure on b\n")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow ended with %v", err)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Errorf("follow output %q: want the live entry once", out.String())
	}
}

// TestLogsCommandClusterNeedsNoDataRoot: reading the cluster needs no
// data root on this machine, and creates none.
func TestLogsCommandClusterNeedsNoDataRoot(t *testing.T) {
	url, _, _ := logsCluster(t)
	root := filepath.Join(t.TempDir(), "nowhere")
	app, out, errb := newClusterApp(root, url)
	if code := Main(context.Background(), []string{"logs", "--last", "1"}, app); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), "answer on a") {
		t.Errorf("output %q", out.String())
	}
	if _, err := os.Stat(root); err == nil {
		t.Errorf("ava logs created the data root %s", root)
	}
}

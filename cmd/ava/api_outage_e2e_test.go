package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// apiTimeout is the gateway's AVA_API_TIMEOUT in the outage tests.
const apiTimeout = 2 * time.Second

// TestAPIDuringPostgresOutage: a gateway on PostgreSQL with
// AVA_API_TIMEOUT=2s. With the database paused (SIGSTOP), GET and POST
// /api/subagents and POST /api/chat each answer 503 with Retry-After and
// a JSON error within about the deadline; the spawn and the message the
// client was told failed are not written after the resume; the client's
// Spawn, retrying under one key across the pause, makes exactly one
// subagent. With the database stopped (connections refused), spawn and
// chat answer 503 with a JSON error (issue 39 item 6).
func TestAPIDuringPostgresOutage(t *testing.T) {
	srv := pgtest.Private(t)
	cl := newClusterOn(t, srv.URL())
	gw := cl.start("gateway", "AVA_API_TIMEOUT="+apiTimeout.String())
	defer func() {
		if t.Failed() {
			t.Logf("gateway: %s", errorLines(gw.stderr.String(), 12))
		}
	}()
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	spawnBody := `{"role":"researcher","task":"QUICK told it failed"}`
	chatBody := `{"sessionKey":"` + first.Session + `","message":"told it failed"}`

	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	for _, r := range []struct{ method, path, body, key string }{
		{"GET", "/api/subagents", "", ""},
		{"POST", "/api/subagents", spawnBody, "spawn-told-failed"},
		{"POST", "/api/chat", chatBody, "chat-told-failed"},
	} {
		wantUnavailable(t, gw, r.method, r.path, r.body, r.key, apiTimeout+3*time.Second)
	}
	// A client's Spawn across the pause: its attempts answered 503 are
	// retried under one key, and the one after the resume spawns.
	type spawned struct {
		sa  client.Subagent
		err error
	}
	retried := make(chan spawned, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sa, _, err := gw.c.SpawnWithKey(ctx, client.SpawnRequest{Role: "researcher", Task: "QUICK retried"}, "spawn-retried")
		retried <- spawned{sa, err}
	}()
	time.Sleep(apiTimeout + time.Second) // the first attempt is answered 503
	srv.Resume()
	resumed = true
	if code := waitReadyz(gw.addr, http.StatusOK, 30*time.Second); code != http.StatusOK {
		t.Fatalf("/readyz answered %d after the resume, want 200", code)
	}
	got := <-retried
	if got.err != nil {
		t.Fatalf("the client's spawn across the pause: %v", got.err)
	}
	again, _, err := gw.c.SpawnWithKey(bg(t), client.SpawnRequest{Role: "researcher", Task: "QUICK retried"}, "spawn-retried")
	if err != nil || again.ID != got.sa.ID {
		t.Fatalf("the same key again: %s (%v), want %s", again.ID, err, got.sa.ID)
	}

	// What the client was told failed is not written afterwards: give a
	// late commit time to land, then look.
	time.Sleep(2 * time.Second)
	st := cl.store()
	ctx := context.Background()
	runs, err := st.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, r := range runs {
		tasks = append(tasks, r.Task)
	}
	if len(runs) != 1 || runs[0].ShortID != got.sa.ID {
		t.Errorf("runs after the resume: %q, want only the retried spawn %s", tasks, got.sa.ID)
	}
	for _, k := range []struct{ scope, key string }{{store.IdempotencySpawn, "spawn-told-failed"}, {store.IdempotencyChat, "chat-told-failed"}} {
		if _, err := st.GetIdempotency(ctx, k.scope, k.key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("key %s of a request answered 503: %v, want not recorded", k.key, err)
		}
	}
	msgs, err := st.Messages(ctx, first.Session, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Text == "told it failed" {
			t.Errorf("the message answered 503 was stored afterwards (message %d)", m.ID)
		}
	}

	srv.Stop()
	stopped := true
	defer func() {
		if stopped {
			srv.Start()
		}
	}()
	wantUnavailable(t, gw, "POST", "/api/subagents", spawnBody, "spawn-refused", apiTimeout+3*time.Second)
	wantUnavailable(t, gw, "POST", "/api/chat", chatBody, "chat-refused", apiTimeout+3*time.Second)
	srv.Start()
	stopped = false
}

// wantUnavailable sends a request to the gateway and checks that it is
// answered 503 with Retry-After and a JSON error within within.
func wantUnavailable(t *testing.T, gw *daemon, method, path, body, key string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+gw.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gw.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set(client.IdempotencyKeyHeader, key)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(start)
	if err != nil {
		t.Errorf("%s %s: no answer after %s: %v", method, path, took.Round(time.Millisecond), err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var eb client.ErrorBody
	t.Logf("%s %s: %d in %s: %s", method, path, resp.StatusCode, took.Round(time.Millisecond), strings.TrimSpace(string(b)))
	switch {
	case resp.StatusCode != http.StatusServiceUnavailable:
		t.Errorf("%s %s: %d, want 503", method, path, resp.StatusCode)
	case resp.Header.Get("Retry-After") == "":
		t.Errorf("%s %s: 503 without Retry-After", method, path)
	case json.Unmarshal(b, &eb) != nil || eb.Error == "":
		t.Errorf("%s %s: 503 without a JSON error: %q", method, path, b)
	case took > within:
		t.Errorf("%s %s: answered after %s, want within %s", method, path, took.Round(time.Millisecond), within)
	}
}

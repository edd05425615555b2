package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/hooks"
	"github.com/avaagent/ava/hookspec"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSignatureVerifiesAsAReceiverWould(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"eventType":"subagent:complete"}`)
	now := time.Unix(1_800_000_000, 0)
	h := hooks.Sign(secret, now, body)
	if !strings.HasPrefix(h, "t=1800000000,v1=") {
		t.Fatalf("header %q", h)
	}
	if err := hooks.Verify(h, secret, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("verify: %v", err)
	}
	for name, c := range map[string]struct {
		h      string
		secret string
		body   string
		at     time.Time
	}{
		"other body":   {h, "s3cret", `{"eventType":"subagent:error"}`, now},
		"other secret": {h, "guess", string(body), now},
		"replayed":     {h, "s3cret", string(body), now.Add(time.Hour)},
		"no v1":        {"t=1800000000", "s3cret", string(body), now},
	} {
		if err := hooks.Verify(c.h, []byte(c.secret), []byte(c.body), c.at, 5*time.Minute); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestCommandHookGetsTheEventOnStdin(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "got")
	script := writeScript(t, dir, "hook.sh", `cat > `+out+`; echo "$AVA_HOOK_EVENT $AVA_HOOK_DELIVERY" >> `+out)
	s := hooks.NewSender([]string{"PATH=/usr/bin:/bin"}, "ava/test")
	spec := hookspec.Spec{Events: []string{"subagent:start"}, Command: []string{script}}
	if err := s.Send(t.Context(), hooks.Attempt{Spec: spec, ID: 7, Event: "subagent:start", Body: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if string(got) != "{\"a\":1}subagent:start 7\n" {
		t.Fatalf("hook got %q", got)
	}
}

func TestCommandHookFailuresSayWhy(t *testing.T) {
	dir := t.TempDir()
	s := hooks.NewSender(nil, "ava/test")
	fail := writeScript(t, dir, "fail.sh", `echo "no such channel" >&2; exit 3`)
	err := s.Send(t.Context(), hooks.Attempt{Spec: hookspec.Spec{Command: []string{fail}}, Body: []byte("{}")})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no such channel") {
		t.Fatalf("failing command: %v", err)
	}
	slow := writeScript(t, dir, "slow.sh", `sleep 30 & sleep 30`)
	start := time.Now()
	err = s.Send(t.Context(), hooks.Attempt{Spec: hookspec.Spec{Command: []string{slow}, Timeout: 200 * time.Millisecond}, Body: []byte("{}")})
	if err == nil || !strings.Contains(err.Error(), "timeout") || time.Since(start) > 10*time.Second {
		t.Fatalf("slow command: %v after %s", err, time.Since(start))
	}
}

func TestWebhookIsSignedAndNon2xxFails(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.WriteHeader(int(status.Load()))
		io.WriteString(w, "nope")
	}))
	defer srv.Close()
	s := hooks.NewSender(nil, "ava/test")
	s.Getenv = func(k string) string { return map[string]string{"HOOK_SECRET": "k3y"}[k] }
	spec := hookspec.Spec{URL: srv.URL, SecretEnv: "HOOK_SECRET"}
	body := []byte(`{"eventType":"proposal"}`)
	if err := s.Send(t.Context(), hooks.Attempt{Spec: spec, ID: 9, Event: "proposal", Body: body}); err != nil {
		t.Fatal(err)
	}
	r, b := <-got, <-bodies
	if err := hooks.Verify(r.Header.Get(hooks.HeaderSignature), []byte("k3y"), b, time.Now(), time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if r.Header.Get(hooks.HeaderDelivery) != "9" || r.Header.Get(hooks.HeaderEvent) != "proposal" || string(b) != string(body) {
		t.Fatalf("request %v %s", r.Header, b)
	}
	for _, code := range []int{500, 302, 404} {
		status.Store(int32(code))
		err := s.Send(t.Context(), hooks.Attempt{Spec: spec, Body: body})
		<-got
		<-bodies
		if err == nil || !strings.Contains(err.Error(), http.StatusText(code)) {
			t.Errorf("answer %d: %v", code, err)
		}
	}
}

// A webhook's failures name it by scheme and host only, whatever failed
// (an answer, a refused connection, a timeout, a missing secret): the
// error is stored and shown, and the URL's path and query are its
// credential. The request itself goes to the whole URL.
func TestWebhookErrorsNameSchemeAndHostOnly(t *testing.T) {
	const secret = "/services/T0/B0/SECRETpath?token=tok-SECRET"
	var asked atomic.Value
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		asked.Store(r.URL.RequestURI())
		if r.URL.Query().Get("slow") != "" {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	defer close(release)
	s := hooks.NewSender(nil, "ava/test")
	s.Getenv = func(string) string { return "" }
	body := []byte(`{}`)
	for name, spec := range map[string]hookspec.Spec{
		"answered 503":    {URL: srv.URL + secret},
		"refused":         {URL: "http://127.0.0.1:1" + secret},
		"timeout":         {URL: srv.URL + secret + "&slow=1", Timeout: 50 * time.Millisecond},
		"secret not set":  {URL: srv.URL + secret, SecretEnv: "UNSET_HOOK_KEY"},
		"bad request URL": {URL: "http://127.0.0.1:1/%zz" + secret},
	} {
		err := s.Send(t.Context(), hooks.Attempt{Spec: spec, Body: body})
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "/services") {
			t.Errorf("%s: the error shows the URL: %v", name, err)
		}
		if !strings.Contains(err.Error(), "webhook "+spec.Target()+":") {
			t.Errorf("%s: the error does not name the webhook as %s: %v", name, spec.Target(), err)
		}
	}
	if got, _ := asked.Load().(string); !strings.HasPrefix(got, secret) {
		t.Errorf("the webhook was asked at %q, want the configured %q", got, secret)
	}
}

// A delivery that fails is retried after its backoff, and one whose
// attempts are spent is dead until retried.
func TestDispatcherRetriesThenDeadLetters(t *testing.T) {
	var up atomic.Bool
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	spec := hookspec.Spec{Events: []string{hookspec.SessionIdle}, URL: srv.URL, Attempts: 2, Backoff: 50 * time.Millisecond}
	router := &hooks.Router{Hooks: []hookspec.Spec{spec}}
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ava.db"), sqlite.Options{Outbox: router.Outbox})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev := event.New(event.SessionState, event.StateContent{State: "idle"})
	ev.Session, ev.Agent, ev.Seq, ev.Time = "ava:cli:x", "ava", 1, time.Now()
	if err := st.AppendEvents(t.Context(), []event.Event{ev}); err != nil {
		t.Fatal(err)
	}
	d := hooks.NewDispatcher(hooks.Options{Store: st, Hooks: map[string]hookspec.Spec{spec.ID(): spec}, Owner: "p1",
		Sender: hooks.NewSender(nil, "ava/test"), Poll: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	dl := waitStatus(t, st, store.HookDead)
	cancel()
	<-done
	if dl.Attempts != 2 || !strings.Contains(dl.LastError, "503") || hits.Load() != 2 {
		t.Fatalf("dead delivery %+v after %d hits", dl, hits.Load())
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(dl.Body), &entry); err != nil || entry["eventType"] != "session:idle" || entry["session"] != "ava:cli:x" {
		t.Fatalf("body %s (%v)", dl.Body, err)
	}
	up.Store(true)
	ids, err := st.RetryHookDeliveries(t.Context(), nil, []string{store.HookDead})
	if err != nil || len(ids) != 1 {
		t.Fatalf("retry %v %v", ids, err)
	}
	if n := d.DeliverNow(t.Context(), ids); n != 1 {
		t.Fatalf("delivered now %d", n)
	}
	if dl = waitStatus(t, st, store.HookDelivered); dl.DeliveredAt == nil {
		t.Fatalf("delivered %+v", dl)
	}
	if d.Outcomes.Delivered.Load() != 1 || d.Outcomes.Dead.Load() != 1 || d.Outcomes.Failed.Load() != 1 {
		t.Fatalf("outcomes %d %d %d", d.Outcomes.Delivered.Load(), d.Outcomes.Failed.Load(), d.Outcomes.Dead.Load())
	}
}

func waitStatus(t *testing.T, st store.HookStore, status string) store.HookDelivery {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ds, err := st.HookDeliveries(t.Context(), store.HookFilter{Status: []string{status}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) > 0 {
			return ds[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no delivery became %s", status)
	return store.HookDelivery{}
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// A role's hooks hear its own subagents' events; the config file's hear
// every one; a hook reaching the same target as another is one hook.
func TestRouterRoleHooks(t *testing.T) {
	cfgHook := hookspec.Spec{Events: []string{hookspec.SubagentComplete}, URL: "http://127.0.0.1:1/all"}
	roleHook := hookspec.Spec{Events: []string{hookspec.SubagentComplete, hookspec.SubagentStart}, Command: []string{"/bin/true"}}
	r := &hooks.Router{Hooks: []hookspec.Spec{cfgHook, cfgHook}, Host: "here", RoleHooks: func(role string) []hookspec.Spec {
		if role == "notifier" {
			return []hookspec.Spec{roleHook}
		}
		return nil
	}}
	complete := func(role string) event.Event {
		ev := event.New(event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-abcdef", Role: role, Mode: "single",
			Status: "success", Summary: "done"})
		ev.Session, ev.Time = "ava:cli:r", time.Now()
		return ev
	}
	if ds := r.Outbox(complete("researcher")); len(ds) != 1 || ds[0].HookID != cfgHook.ID() || ds[0].Host != "" {
		t.Fatalf("researcher: %+v", ds)
	}
	ds := r.Outbox(complete("notifier"))
	if len(ds) != 2 || ds[1].HookID != roleHook.ID() || ds[1].Kind != hookspec.KindCommand || ds[1].Host != "here" ||
		ds[1].MaxAttempts != hookspec.DefaultAttempts {
		t.Fatalf("notifier: %+v", ds)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(ds[0].Body), &body); err != nil || body["eventType"] != "subagent:complete" || body["jobId"] != "S-abcdef" ||
		body["agentName"] != "notifier" || body["type"] != "agent_event" {
		t.Fatalf("body %s %v", ds[0].Body, err)
	}
	other := event.New(event.UserMessage, map[string]string{"text": "hi"})
	if ds := r.Outbox(other); len(ds) != 0 {
		t.Fatalf("a user message got deliveries: %+v", ds)
	}
}

// failingStore refuses claims, as a database that is down does.
type failingStore struct {
	store.HookStore
	down atomic.Bool
}

func (f *failingStore) ClaimHookDeliveries(ctx context.Context, c store.HookClaim) ([]store.HookDelivery, error) {
	if f.down.Load() {
		return nil, errors.New("connection refused")
	}
	return nil, nil
}

// countingHandler counts log records by level.
type countingHandler struct {
	slog.Handler
	warn, info atomic.Int32
}

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	switch r.Level {
	case slog.LevelWarn:
		h.warn.Add(1)
	case slog.LevelInfo:
		h.info.Add(1)
	}
	return nil
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

// A store that cannot be reached is said once, not once a poll, and its
// return once.
func TestDispatcherLogsAnOutageOnce(t *testing.T) {
	st := &failingStore{}
	st.down.Store(true)
	h := &countingHandler{Handler: slog.DiscardHandler}
	spec := hookspec.Spec{Events: []string{hookspec.SessionIdle}, URL: "http://127.0.0.1:1/x"}
	d := hooks.NewDispatcher(hooks.Options{Store: st, Hooks: map[string]hookspec.Spec{spec.ID(): spec}, Owner: "p1",
		Sender: hooks.NewSender(nil, "ava/test"), Poll: 5 * time.Millisecond, Log: slog.New(h)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	st.down.Store(false)
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	if h.warn.Load() != 1 || h.info.Load() != 1 {
		t.Fatalf("%d warnings and %d infos for one outage, want 1 and 1", h.warn.Load(), h.info.Load())
	}
}

// A router with no hook defined looks at no event.
func TestRouterWithoutHooksDoesNothing(t *testing.T) {
	looked := false
	r := &hooks.Router{Listening: func() bool { return false }, RoleHooks: func(string) []hookspec.Spec {
		looked = true
		return nil
	}}
	ev := event.New(event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-abcdef", Role: "x", Mode: "single", Status: "success"})
	ev.Session, ev.Time = "ava:cli:r", time.Now()
	if ds := r.Outbox(ev); ds != nil || looked {
		t.Fatalf("deliveries %+v, role hooks looked up %v", ds, looked)
	}
}

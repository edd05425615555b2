package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway"
	"github.com/avaagent/ava/gateway/client"
)

// publish publishes n kept events in the subagent's session, as its
// agent loop would.
func (e *env) publish(sa client.Subagent, n int) {
	e.t.Helper()
	for i := range n {
		ev := event.New(event.ToolCall, event.ToolCallContent{ID: fmt.Sprint(i), Name: "read_file", Args: json.RawMessage(`{"path":"x"}`)})
		ev.Session, ev.Agent = sa.SessionKey, sa.ID
		if _, err := e.in.Hub.Publish(ev); err != nil {
			e.t.Fatal(err)
		}
	}
}

// readN reads kept events until it has n of them.
func readN(t *testing.T, st *client.Stream, n int) []client.Event {
	t.Helper()
	var kept []client.Event
	for len(kept) < n {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream: %v after %d kept events", err, len(kept))
		}
		if ev.ID > 0 {
			kept = append(kept, ev)
		}
	}
	return kept
}

func TestResumeWithLastEventIDLosesNothingRepeatsNothing(t *testing.T) {
	for _, forget := range []bool{false, true} {
		t.Run(fmt.Sprintf("forgotten=%v", forget), func(t *testing.T) {
			e := newEnv(t, envOptions{})
			sa := e.spawnBlocking("")
			e.publish(sa, 40)
			st, err := e.c.Stream(ctx(t), sa.SessionKey, 0)
			must(t, err)
			got := readN(t, st, 25)
			st.Close() // dropped mid-way
			e.publish(sa, 30)
			if forget {
				e.in.Sessions.Forget(sa.SessionKey) // what it missed is no longer in memory
			}
			st, err = e.c.Stream(ctx(t), sa.SessionKey, got[len(got)-1].ID)
			must(t, err)
			defer st.Close()
			total, err := e.in.Store.LastSeq(ctx(t), sa.SessionKey)
			must(t, err)
			got = append(got, readN(t, st, int(total)-len(got))...)
			// Live events after the reconnect, across another Forget.
			e.in.Sessions.Forget(sa.SessionKey)
			e.publish(sa, 10)
			got = append(got, readN(t, st, 10)...)
			checkSeqs(t, got, 1)
			// The after parameter resumes the same way.
			code, body := e.do("GET", "/api/chat/stream?sessionKey="+sa.SessionKey+"&after=x", "", nil)
			wantError(t, code, body, 400, "after")
		})
	}
}

func TestParentTurnEndsWhileItsSubagentStreamsOn(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, evs, res := e.chat(client.ChatRequest{Message: "SPAWNBG now"})
	if res.Status != "success" || res.Text != "parent done" {
		t.Fatalf("parent turn %+v", res)
	}
	var spawn struct {
		Content event.SubagentSpawnContent `json:"content"`
	}
	for _, ev := range evs {
		if ev.Type == "SubagentSpawn" {
			must(t, json.Unmarshal(ev.Data, &spawn))
		}
	}
	id := spawn.Content.SubagentID
	if id == "" {
		t.Fatal("no SubagentSpawn in the parent's turn")
	}
	sessions, err := e.c.Sessions(ctx(t))
	must(t, err)
	if len(sessions) != 1 || sessions[0].State != "waiting_for_subagents" || sessions[0].RunningSubagents != 1 {
		t.Fatalf("parent after its turn: %+v", sessions)
	}
	sa, err := e.c.Subagent(ctx(t), id)
	must(t, err)
	if sa.Status != "running" && sa.Status != "pending" {
		t.Fatalf("subagent after its parent's turn: %+v", sa)
	}
	st, err := e.c.Stream(ctx(t), sa.SessionKey, 0)
	must(t, err)
	defer st.Close()
	e.publish(sa, 5) // it keeps producing events after the parent's turn ended
	_, err = e.c.Stop(ctx(t), sa.SessionKey)
	must(t, err)
	kept := until(t, st, isType("SessionEnd"))
	checkSeqs(t, kept, 1)
	if len(kept) < 7 || !strings.Contains(string(kept[len(kept)-1].Data), "cancelled") {
		t.Fatalf("subagent stream %v", kept)
	}
}

func Test200StreamsOnOneSubagentEachGetEverything(t *testing.T) {
	e := newEnv(t, envOptions{})
	sa := e.spawnBlocking("")
	const clients, events = 200, 300
	streams := make([]*client.Stream, clients)
	for i := range streams {
		st, err := e.c.Stream(ctx(t), sa.SessionKey, 0)
		must(t, err)
		defer st.Close()
		streams[i] = st
	}
	results := make([][]client.Event, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Go(func() {
			for {
				ev, err := st.Next()
				if err != nil {
					errs[i] = err
					return
				}
				if ev.ID > 0 {
					results[i] = append(results[i], ev)
				}
				if ev.Type == "SessionEnd" {
					return
				}
			}
		})
	}
	e.publish(sa, events)
	_, err := e.c.Stop(ctx(t), sa.SessionKey)
	must(t, err)
	wg.Wait()
	want, err := e.in.Store.LastSeq(ctx(t), sa.SessionKey)
	must(t, err)
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		if uint64(len(results[i])) != want {
			t.Fatalf("client %d got %d events, want %d", i, len(results[i]), want)
		}
		checkSeqs(t, results[i], 1)
	}
}

func TestHeartbeatOnAnIdleStream(t *testing.T) {
	e := newEnv(t, envOptions{heartbeat: 10 * time.Millisecond})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	// Beyond the session's last event: a client from another data root
	// is told, not left waiting.
	code, body := e.do("GET", "/api/chat/stream?sessionKey="+res.Session+"&after=999", "", nil)
	wantError(t, code, body, 400, "999")
	last, err := e.in.Hub.LastSeq(res.Session)
	must(t, err)
	req, _ := http.NewRequestWithContext(ctx(t), "GET", e.ts.URL+"/api/chat/stream?sessionKey="+res.Session, nil)
	req.Header.Set("Last-Event-ID", fmt.Sprint(last))
	resp, err := http.DefaultClient.Do(e.authorize(req))
	must(t, err)
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get(client.SessionKeyHeader) != res.Session {
		t.Fatalf("headers %v", resp.Header)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != ": heartbeat\n" {
		t.Fatalf("first line %q %v", line, err)
	}
}

func TestSafetyRules(t *testing.T) {
	e := newEnv(t, envOptions{})
	code, body := e.do("GET", "/api/sessions", "", map[string]string{"Host": "evil.example:7777"})
	wantError(t, code, body, 403, "DNS rebinding")
	code, body = e.do("POST", "/api/chat", `{"message":"hi"}`, map[string]string{"Host": "attacker.test"})
	wantError(t, code, body, 403, "DNS rebinding")
	code, body = e.do("POST", "/api/chat", `{"message":"hi"}`, map[string]string{"Origin": "http://evil.example"})
	wantError(t, code, body, 403, "cross-origin")
	code, body = e.do("POST", "/api/chat/stop", `{"sessionKey":"x:y"}`, map[string]string{"Origin": "null"})
	wantError(t, code, body, 403, "cross-origin")
	code, body = e.do("POST", "/api/subagents", `{}`, map[string]string{"Sec-Fetch-Site": "cross-site"})
	wantError(t, code, body, 403, "cross-site")
	code, _ = e.do("POST", "/api/chat/stop", `{"sessionKey":"ava:web:nosuch"}`, map[string]string{"Origin": e.ts.URL})
	if code != 404 {
		t.Fatalf("same-origin POST: %d, want it through to the route (404)", code)
	}
	code, _ = e.do("GET", "/healthz", "", map[string]string{"Host": "localhost"})
	if code != 200 {
		t.Fatalf("Host localhost: %d", code)
	}
}

func TestTokenRules(t *testing.T) {
	_, err := gateway.New(gateway.Options{Runtime: newEnv(t, envOptions{}).rt, Addr: "0.0.0.0:7777"})
	if err == nil || !strings.Contains(err.Error(), "AVA_TOKEN") {
		t.Fatalf("non-loopback without a token: %v", err)
	}
	e := newEnv(t, envOptions{token: "s3cret"})
	for _, auth := range []string{"", "Bearer wrong", "Basic s3cret", "Bearer s3cre", "Bearer " + testToken} {
		code, body := e.do("GET", "/api/sessions", "", map[string]string{"Authorization": auth})
		wantError(t, code, body, 401, "token")
	}
	if code, body := e.do("GET", "/api/sessions", "", map[string]string{"Authorization": "Bearer s3cret"}); code != 200 {
		t.Fatalf("right token: %d %s", code, body)
	}
	if code, _ := e.do("GET", "/healthz", "", map[string]string{"Authorization": ""}); code != 200 {
		t.Fatalf("healthz without a token: %d", code)
	}
	if _, err := e.c.Sessions(ctx(t)); err != nil {
		t.Fatalf("client with the token: %v", err)
	}
}

func TestDrainEndsStreamsAndWaitsForTurns(t *testing.T) {
	e := newEnv(t, envOptions{})
	turn, err := e.c.Chat(ctx(t), client.ChatRequest{Message: "SLOW drain"})
	must(t, err)
	defer turn.Close()
	idle, err := e.c.Stream(ctx(t), turn.SessionKey, 0)
	must(t, err)
	defer idle.Close()
	left := e.srv.Drain(context.Background())
	if left != 0 {
		t.Fatalf("%d still running after an unbounded drain", left)
	}
	until(t, turn, isType(client.EventDone)) // the turn finished and its stream ended properly
	for {
		if _, err := idle.Next(); err != nil {
			break // the GET stream was ended by the drain
		}
	}
	code, body := e.do("POST", "/api/chat", `{"message":"more"}`, nil)
	wantError(t, code, body, 503, "shutting down")
}

// TestStreamCoalescesWritesUnderLoad: events published about one a
// millisecond reach a stream in far fewer writes to its socket than
// events (a write is most of what a delivery costs the daemon): at most
// one write per 5 ms, still in order, without a gap or a repeat.
func TestStreamCoalescesWritesUnderLoad(t *testing.T) {
	var writes atomic.Int64
	e := newEnv(t, envOptions{listen: func(l net.Listener) net.Listener { return countingListener{l, &writes} }})
	sa := e.spawnBlocking("")
	base, err := e.in.Store.LastSeq(ctx(t), sa.SessionKey)
	must(t, err)
	st, err := e.c.Stream(ctx(t), sa.SessionKey, base)
	must(t, err)
	defer st.Close()
	writes.Store(0) // from here on, only the stream's
	start := time.Now()
	const n = 200
	go func() {
		for i := range n {
			ev := event.New(event.ToolCall, event.ToolCallContent{ID: fmt.Sprint(i), Name: "bench"})
			ev.Session, ev.Agent = sa.SessionKey, sa.ID
			if _, err := e.in.Hub.Publish(ev); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond) // a steady stream of events
		}
	}()
	checkSeqs(t, readN(t, st, n), base+1)
	elapsed, w := time.Since(start), writes.Load()
	if limit := int64(elapsed/(5*time.Millisecond)) + 2; w > limit {
		t.Fatalf("%d events in %v came in %d writes, want at most %d", n, elapsed.Round(time.Millisecond), w, limit)
	}
	t.Logf("%d events in %v came in %d writes", n, elapsed.Round(time.Millisecond), w)
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestStreamIsOneGoroutine: a stream is served by its request's
// goroutine alone (next to net/http's own two per connection), not by a
// second one pumping its subscription: a new event wakes one goroutine
// per subscriber, not two. The client's two per connection are in the
// count as well.
func TestStreamIsOneGoroutine(t *testing.T) {
	e := newEnv(t, envOptions{})
	sa := e.spawnBlocking("")
	e.publish(sa, 1)
	const n = 50
	before := runtime.NumGoroutine()
	for range n {
		st, err := e.c.Stream(ctx(t), sa.SessionKey, 0)
		must(t, err)
		defer st.Close()
		readN(t, st, 1) // the stream is up and has caught up
	}
	time.Sleep(50 * time.Millisecond) // let the streams settle in their waits
	if per := float64(runtime.NumGoroutine()-before) / n; per > 4.5 {
		t.Fatalf("%.1f goroutines a stream, want 4 (the server's request and connection reader, the client's two)", per)
	}
}

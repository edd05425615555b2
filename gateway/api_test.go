package gateway_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

func TestChatNewSessionThenContinue(t *testing.T) {
	e := newEnv(t, envOptions{})
	start, evs, res := e.chat(client.ChatRequest{Message: "hello"})
	if !strings.HasPrefix(start.SessionKey, "ava:web:") || start.Queued {
		t.Fatalf("start %+v", start)
	}
	if res.Status != "success" || res.Text != "hello back" || res.Session != start.SessionKey {
		t.Fatalf("result %+v", res)
	}
	var kept []client.Event
	var types []string
	for _, ev := range evs {
		if ev.ID > 0 {
			kept = append(kept, ev)
			types = append(types, ev.Type)
		}
	}
	checkSeqs(t, kept, 1)
	for _, want := range []string{"UserMessage", "AssistantMessage", "SessionEnd"} {
		if !strings.Contains(strings.Join(types, ","), want) {
			t.Fatalf("no %s in %v", want, types)
		}
	}
	_, evs2, res2 := e.chat(client.ChatRequest{SessionKey: start.SessionKey, Message: "again"})
	if res2.Text != "second answer" {
		t.Fatalf("second turn %+v", res2)
	}
	// The second turn's stream carries what the session published from
	// the request on (the first turn's idle state may come before it),
	// numbered on from the first turn, with no gap inside it.
	var kept2 []client.Event
	for _, ev := range evs2 {
		if ev.ID > 0 {
			kept2 = append(kept2, ev)
		}
	}
	if len(kept2) == 0 || kept2[0].ID <= kept[len(kept)-1].ID || kept2[0].ID > kept[len(kept)-1].ID+2 {
		t.Fatalf("second turn's events %v after %d", kept2, kept[len(kept)-1].ID)
	}
	checkSeqs(t, kept2, kept2[0].ID)
}

func TestChatRefusesBadRequests(t *testing.T) {
	e := newEnv(t, envOptions{})
	huge := jsonBody(client.ChatRequest{Message: strings.Repeat("x", 2<<20)})
	for _, tc := range []struct {
		name, body, ctype string
		code              int
		want              string
	}{
		{"empty body", "", "application/json", 400, "empty body"},
		{"not JSON", "{nope", "application/json", 400, "bad JSON"},
		{"unknown field", `{"message":"hi","bogus":1}`, "application/json", 400, "unknown field"},
		{"two objects", `{"message":"hi"}{"message":"hi"}`, "application/json", 400, "after the object"},
		{"empty message", `{"message":"  "}`, "application/json", 400, "message: empty"},
		{"form body", `message=hi`, "application/x-www-form-urlencoded", 415, "must be JSON"},
		{"too large", huge, "application/json", 413, "body over"},
		{"bad key", `{"sessionKey":"ava:web:a b","message":"hi"}`, "application/json", 400, "spaces"},
		{"new key outside the grammar", `{"sessionKey":"mine","message":"hi"}`, "application/json", 400, "ava:<channel>:<id>"},
		{"new key with '_' in its ID", `{"sessionKey":"ava:web:a_b","message":"hi"}`, "application/json", 400, "ava:<channel>:<id>"},
		{"new key too long", `{"sessionKey":"ava:web:` + strings.Repeat("x", 129) + `","message":"hi"}`, "application/json", 400, "up to 128"},
		{"new subagent key", `{"sessionKey":"ava:subagent:mine","message":"hi"}`, "application/json", 404, "not found"},
		{"unknown subagent", `{"sessionKey":"ava:subagent:S-abcdef","message":"hi"}`, "application/json", 404, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.ts.URL+"/api/chat", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.ctype)
			resp, err := http.DefaultClient.Do(e.authorize(req))
			must(t, err)
			defer resp.Body.Close()
			var eb client.ErrorBody
			_ = json.NewDecoder(resp.Body).Decode(&eb)
			if resp.StatusCode != tc.code || !strings.Contains(eb.Error, tc.want) || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("got %d %q, want %d mentioning %q", resp.StatusCode, eb.Error, tc.code, tc.want)
			}
		})
	}
	code, body := e.do("GET", "/api/nothing", "", nil)
	wantError(t, code, body, 404, "no route")
	code, body = e.do("DELETE", "/api/chat", "", nil)
	wantError(t, code, body, 405, "not allowed")
}

// TestWrongMethodIs405: a route's path under a method it does not take
// answers 405 with an Allow header listing the ones it does (HEAD with
// GET), whatever the body; an unknown path stays 404, and without the
// token both are 401.
func TestWrongMethodIs405(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct{ method, path, body, allow string }{
		{"GET", "/api/chat/stop", "", "POST"},
		{"DELETE", "/api/chat", "", "POST"},
		{"PUT", "/api/chat", `{"message":"hi"}`, "POST"},
		{"POST", "/api/chat/stream?sessionKey=x", `{}`, "GET, HEAD"},
		{"PUT", "/api/sessions/ava:web:x", `{"title":"t"}`, "GET, HEAD, PATCH"},
		{"DELETE", "/api/groups/G-1/findings", "", "GET, HEAD"},
		{"POST", "/healthz", `{}`, "GET, HEAD"},
		{"PUT", "/mcp", `{}`, "DELETE, GET, HEAD, POST"},
		{"POST", "/", `{}`, "GET, HEAD"},
	} {
		resp, body := e.doFull(tc.method, tc.path, tc.body, nil)
		wantError(t, resp.StatusCode, body, 405, "not allowed")
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
	code, body := e.do("PUT", "/api/nothing", `{}`, nil)
	wantError(t, code, body, 404, "no route")
	code, body = e.do("DELETE", "/api/chat", "", map[string]string{"Authorization": ""})
	wantError(t, code, body, 401, "token")
}

// A client names its own main session: the first message creates it,
// the next ones continue it; reading a session that was never written
// to stays 404.
func TestChatCreatesAClientChosenSession(t *testing.T) {
	e := newEnv(t, envOptions{})
	const key = "ava:myapp:Chat-42.x"
	for _, path := range []string{"/api/sessions/" + key, "/api/chat/stream?sessionKey=" + key} {
		code, body := e.do("GET", path, "", nil)
		wantError(t, code, body, 404, "not found")
	}
	start, evs, res := e.chat(client.ChatRequest{SessionKey: key, Message: "hello"})
	if start.SessionKey != key || res.Status != "success" || res.Text != "hello back" || res.Session != key {
		t.Fatalf("first message: start %+v result %+v", start, res)
	}
	var kept []client.Event
	for _, ev := range evs {
		if ev.ID > 0 {
			kept = append(kept, ev)
		}
	}
	checkSeqs(t, kept, 1)
	got, err := e.c.Session(ctx(t), key)
	must(t, err)
	if got.Key != key {
		t.Fatalf("session %+v", got)
	}
	if _, _, res := e.chat(client.ChatRequest{SessionKey: key, Message: "again"}); res.Text != "second answer" {
		t.Fatalf("second turn %+v", res)
	}
	sessions, err := e.c.Sessions(ctx(t))
	must(t, err)
	if len(sessions) != 1 || sessions[0].Key != key {
		t.Fatalf("sessions %+v", sessions)
	}
}

func TestBusySessionIs409UnlessQueued(t *testing.T) {
	e := newEnv(t, envOptions{})
	first, err := e.c.Chat(ctx(t), client.ChatRequest{Message: "SLOW please"})
	must(t, err)
	defer first.Close()
	key := first.SessionKey
	_, err = e.c.Chat(ctx(t), client.ChatRequest{SessionKey: key, Message: "now"})
	if !client.IsStatus(err, http.StatusConflict) {
		t.Fatalf("second message while busy: %v, want 409", err)
	}
	// The 409 offers what the API can do, not the core's "supersede".
	if msg := err.Error(); !strings.Contains(msg, `"queue": true`) || !strings.Contains(msg, "POST /api/chat/stop") ||
		strings.Contains(msg, "supersede") || strings.Contains(msg, "steer") {
		t.Fatalf("409 text: %s", msg)
	}
	sessions, err := e.c.Sessions(ctx(t))
	must(t, err)
	if len(sessions) != 1 || sessions[0].Key != key || sessions[0].State != "running" {
		t.Fatalf("sessions while running %+v", sessions)
	}
	start, _, res := e.chat(client.ChatRequest{SessionKey: key, Message: "later", Queue: true})
	if !start.Queued || res.Text != "queued answered" || res.Status != "success" {
		t.Fatalf("queued: start %+v result %+v", start, res)
	}
	done := until(t, first, func(ev client.Event) bool { return ev.Type == client.EventDone })
	if len(done) == 0 {
		t.Fatal("first stream had no kept events")
	}
}

// With the merge window on, the person's second message within it
// cancels the running request and the two are answered as one.
func TestMessageWithinTheMergeWindowIsMerged(t *testing.T) {
	e := newEnv(t, envOptions{merge: "1m"})
	first, err := e.c.Chat(ctx(t), client.ChatRequest{Message: "SLOW please"})
	must(t, err)
	defer first.Close()
	start, evs, res := e.chat(client.ChatRequest{SessionKey: first.SessionKey, Message: "and quickly"})
	if start.Queued || res.Status != "success" {
		t.Fatalf("merged turn: start %+v result %+v", start, res)
	}
	merged := false
	for _, ev := range evs {
		merged = merged || (ev.Type == "UserMessage" && strings.Contains(string(ev.Data), `SLOW please\n\nand quickly`))
	}
	if !merged {
		t.Fatalf("the merged turn's user message does not carry both messages: %v", evs)
	}
	kept := until(t, first, func(ev client.Event) bool { return ev.Type == client.EventDone })
	cancelled := false
	for _, ev := range kept {
		cancelled = cancelled || (ev.Type == "SessionEnd" && strings.Contains(string(ev.Data), `"status":"cancelled"`))
	}
	if !cancelled {
		t.Fatalf("the first request did not end cancelled: %v", kept)
	}
}

func TestStopAndSubagentRoutes(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, bad := range []string{"0", "-1", "x", "10001"} {
		code, body := e.do("GET", "/api/subagents?limit="+bad, "", nil)
		wantError(t, code, body, 400, "limit")
	}
	code, body := e.do("POST", "/api/chat/stop", `{"sessionKey":"ava:web:nosuch"}`, nil)
	wantError(t, code, body, 404, "not found")
	code, body = e.do("POST", "/api/chat/stop", `{}`, nil)
	wantError(t, code, body, 400, "session key: empty")

	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	parent := res.Session
	sa := e.spawnBlocking(parent)
	if sa.Status != "pending" && sa.Status != "running" || !sa.Live || sa.Parent != parent {
		t.Fatalf("spawned %+v", sa)
	}
	running, err := e.c.Subagents(ctx(t), client.SubagentFilter{Status: []string{"active"}})
	must(t, err)
	if len(running) != 1 || running[0].ID != sa.ID {
		t.Fatalf("active subagents %+v", running)
	}
	byParent, err := e.c.Subagents(ctx(t), client.SubagentFilter{Parent: "ava:web:other"})
	must(t, err)
	if len(byParent) != 0 {
		t.Fatalf("other parent's subagents %+v", byParent)
	}
	got, err := e.c.Subagent(ctx(t), sa.ID[:5])
	must(t, err)
	if got.ID != sa.ID || got.Task != "BLOCKTASK" {
		t.Fatalf("by prefix %+v", got)
	}
	_, err = e.c.Subagent(ctx(t), "S-ffffff")
	if !client.IsStatus(err, 404) {
		t.Fatalf("unknown subagent: %v", err)
	}
	code, body = e.do("GET", "/api/subagents?status=bogus", "", nil)
	wantError(t, code, body, 400, "status")

	_, err = e.c.Chat(ctx(t), client.ChatRequest{SessionKey: sa.SessionKey, Message: "more"})
	if !client.IsStatus(err, 409) {
		t.Fatalf("message to a running subagent: %v, want 409", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"steer": true`) || !strings.Contains(msg, `"queue": true`) ||
		!strings.Contains(msg, "POST /api/chat/stop") || strings.Contains(msg, "ask to queue") {
		t.Fatalf("409 text for a running subagent: %s", msg)
	}
	// Steering is taken at once, not queued; a main session is not steered.
	steer, err := e.c.Chat(ctx(t), client.ChatRequest{SessionKey: sa.SessionKey, Message: "a hint", Steer: true})
	must(t, err)
	first, err := steer.Next()
	must(t, err)
	steer.Close()
	if first.Type != client.EventSession || strings.Contains(string(first.Data), `"queued":true`) {
		t.Fatalf("steer: first event %s %s", first.Type, first.Data)
	}
	code, body = e.do("POST", "/api/chat", `{"sessionKey":"`+parent+`","message":"x","steer":true}`, nil)
	wantError(t, code, body, 400, "steer")
	stop, err := e.c.Stop(ctx(t), sa.SessionKey)
	must(t, err)
	if !stop.Stopped {
		t.Fatalf("stop %+v", stop)
	}
	st, err := e.c.Stream(ctx(t), sa.SessionKey, 0)
	must(t, err)
	defer st.Close()
	until(t, st, isType("SessionEnd"))
	got, err = e.c.Subagent(ctx(t), sa.ID)
	must(t, err)
	if got.Status != "cancelled" || len(got.Result) == 0 {
		t.Fatalf("after stop %+v", got)
	}
	stop, err = e.c.Stop(ctx(t), sa.SessionKey)
	must(t, err)
	if stop.Stopped {
		t.Fatal("second stop says it stopped something")
	}
}

func TestFinishedSubagentTakesAFollowUp(t *testing.T) {
	e := newEnv(t, envOptions{})
	sa, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "researcher", Task: "quick", Model: spawnModel})
	must(t, err)
	st, err := e.c.Stream(ctx(t), sa.SessionKey, 0)
	must(t, err)
	first := until(t, st, isType("SessionEnd"))
	st.Close()
	checkSeqs(t, first, 1)
	_, evs, res := e.chat(client.ChatRequest{SessionKey: sa.SessionKey, Message: "follow up"})
	if res.Status != "success" {
		t.Fatalf("follow-up %+v", res)
	}
	var kept []client.Event
	for _, ev := range evs {
		if ev.ID > 0 {
			kept = append(kept, ev)
		}
	}
	checkSeqs(t, kept, first[len(first)-1].ID+1)
	if !strings.Contains(string(kept[0].Data), "follow up") && kept[0].Type != "UserMessage" && kept[0].Type != "SessionStart" {
		t.Fatalf("follow-up stream starts with %s %s", kept[0].Type, kept[0].Data)
	}
}

func TestSpawnRefusesBadRequests(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"role":"nosuch","task":"x"}`, 400, "unknown role"},
		{`{"role":"researcher","task":" "}`, 400, "task: empty"},
		{`{"role":"researcher","task":"x","maxCostCents":-1}`, 400, "max_cost_cents"},
		{`{"role":"researcher","task":"x","parent":"ava:web:nosuch"}`, 404, "not found"},
		{`{"role":"researcher"`, 400, "bad JSON"},
	} {
		code, body := e.do("POST", "/api/subagents", tc.body, nil)
		wantError(t, code, body, tc.code, tc.want)
	}
}

func TestLogsHealthAndMetrics(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	var logs client.LogList
	code, body := e.do("GET", "/api/logs?type=UserMessage&session="+res.Session, "", nil)
	if code != 200 || json.Unmarshal([]byte(body), &logs) != nil || len(logs.Entries) != 1 || !strings.Contains(string(logs.Entries[0]), `"hello"`) {
		t.Fatalf("logs %d %s", code, body)
	}
	for _, tc := range []struct{ q, want string }{
		{"type=Bogus", "type"}, {"since=whenever", "since"}, {"last=-1", "last"},
		{"since=2026-01-02&until=2026-01-01", "before"},
	} {
		code, body := e.do("GET", "/api/logs?"+tc.q, "", nil)
		wantError(t, code, body, 400, tc.want)
	}
	code, body = e.do("GET", "/api/logs?agent=S-ffffff", "", nil)
	wantError(t, code, body, 404, "no trace")

	h, err := e.c.Health(ctx(t))
	must(t, err)
	if h.Status != "ok" || !h.Offline || h.Version != ava.Version() || h.Version == "" {
		t.Fatalf("health %+v, want version %q", h, ava.Version())
	}
	code, body = e.do("GET", "/metrics", "", nil)
	for _, want := range []string{"ava_subagents_running 0", `ava_model_tokens_total{direction="input",model="` + e.model,
		"ava_http_request_duration_seconds_bucket", `route="POST /api/chat"`, "ava_stream_subscribers 0", "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestNoDaemonIsNamed(t *testing.T) {
	c := client.New("127.0.0.1:1", "")
	_, err := c.Health(ctx(t))
	if !errors.Is(err, client.ErrNoDaemon) {
		t.Fatalf("%v, want ErrNoDaemon", err)
	}
}

// TestSpendRollUp: after a parallel group, a session's spend is its own
// turns plus its two subagents, by model, in GET /api/sessions/{key} and
// in the turn's SessionEnd.
func TestSpendRollUp(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, evs, res := e.chat(client.ChatRequest{Message: "GROUPTWO please"})
	if res.Status != "success" {
		t.Fatalf("turn %+v", res)
	}
	got, err := e.c.Session(ctx(t), res.Session)
	must(t, err)
	sp := got.Spend
	runs, err := e.c.Subagents(ctx(t), client.SubagentFilter{Parent: res.Session})
	must(t, err)
	subTokens := 0
	for _, r := range runs {
		subTokens += r.Tokens
	}
	if len(runs) != 2 || sp.Subagents.Tokens != subTokens || subTokens != 2*110 {
		t.Fatalf("subagents: %d runs, %d tokens; roll-up %+v", len(runs), subTokens, sp.Subagents)
	}
	if sp.Own.Tokens != 750 || sp.Total.Tokens != sp.Own.Tokens+sp.Subagents.Tokens ||
		sp.Total.CostCents != sp.Own.CostCents+sp.Subagents.CostCents {
		t.Fatalf("own %+v + subagents %+v != total %+v", sp.Own, sp.Subagents, sp.Total)
	}
	byModel := 0
	for _, m := range sp.ByModel {
		byModel += m.Tokens
	}
	if byModel != sp.Total.Tokens {
		t.Fatalf("by model %+v sums to %d, total %d", sp.ByModel, byModel, sp.Total.Tokens)
	}
	var end struct {
		Content struct {
			Spend client.Spend `json:"spend"`
		} `json:"content"`
	}
	for _, ev := range evs {
		if ev.Type == "SessionEnd" {
			must(t, json.Unmarshal(ev.Data, &end))
		}
	}
	if end.Content.Spend.Total != sp.Total {
		t.Fatalf("SessionEnd spend %+v, session %+v", end.Content.Spend, sp)
	}
	_, err = e.c.Session(ctx(t), "ava:web:nosuch")
	if !client.IsStatus(err, 404) {
		t.Fatalf("unknown session: %v", err)
	}
}

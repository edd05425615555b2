package gateway_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/avaagent/ava/gateway/client"
)

// userMessages counts the person's messages stored in a session, read
// from ava.db as another process would.
func userMessages(t *testing.T, e *env, session string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.rt.Config().DataRoot, "ava.db")+"?mode=ro")
	must(t, err)
	defer db.Close()
	var n int
	must(t, db.QueryRow(`SELECT count(*) FROM messages WHERE session_key = ? AND role = 'user'`, session).Scan(&n))
	return n
}

// sseDone is the session and done events of a chat stream's body.
func sseDone(t *testing.T, body string) (client.ChatStart, client.TurnResult) {
	t.Helper()
	var start client.ChatStart
	var done *client.TurnResult
	for _, frame := range strings.Split(body, "\n\n") {
		var typ, data string
		for _, line := range strings.Split(frame, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				typ = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data += v
			}
		}
		switch typ {
		case client.EventSession:
			must(t, json.Unmarshal([]byte(data), &start))
		case client.EventDone:
			done = new(client.TurnResult)
			must(t, json.Unmarshal([]byte(data), done))
		}
	}
	if done == nil {
		t.Fatalf("a stream without a done event: %s", body)
	}
	return start, *done
}

// TestChatIdempotencyKey: a message sent with a key and sent again with
// it is stored once and answered once: the repeat (Idempotent-Replayed)
// gets the same session and the same turn's answer; without a session
// key both go to the same new session; the key with another message is
// 409; a key on a subagent's session is 400.
func TestChatIdempotencyKey(t *testing.T) {
	e := newEnv(t, envOptions{})
	hdr := map[string]string{client.IdempotencyKeyHeader: "chat-key-1"}
	body := `{"message":"SLOW one"}`
	resp1, b1 := e.doFull("POST", "/api/chat", body, hdr)
	resp2, b2 := e.doFull("POST", "/api/chat", body, hdr)
	if resp1.StatusCode != http.StatusOK || resp2.StatusCode != http.StatusOK {
		t.Fatalf("statuses %d, %d, want 200 twice: %s / %s", resp1.StatusCode, resp2.StatusCode, b1, b2)
	}
	s1, r1 := sseDone(t, b1)
	s2, r2 := sseDone(t, b2)
	if s1.SessionKey == "" || s1.SessionKey != s2.SessionKey || r1.Text != "slow done" || r2.Text != "slow done" {
		t.Fatalf("first %+v %+v, repeat %+v %+v: want one session and its answer twice", s1, r1, s2, r2)
	}
	if s1.Replayed || !s2.Replayed || resp2.Header.Get(client.IdempotentReplayedHeader) != "true" {
		t.Errorf("replayed: first %v, repeat %v (header %q); want false, then true", s1.Replayed, s2.Replayed,
			resp2.Header.Get(client.IdempotentReplayedHeader))
	}
	if n := userMessages(t, e, s1.SessionKey); n != 1 {
		t.Fatalf("%d messages of the person's stored, want 1", n)
	}
	code, b := e.do("POST", "/api/chat", `{"message":"SLOW two"}`, hdr)
	if code != http.StatusConflict || !strings.Contains(b, "different request") {
		t.Errorf("the key with another message: %d %s, want 409 naming the reuse", code, b)
	}
	code, b = e.do("POST", "/api/chat", body, map[string]string{client.IdempotencyKeyHeader: strings.Repeat("k", 256)})
	if code != http.StatusBadRequest {
		t.Errorf("a bad key: %d %s, want 400", code, b)
	}
	sa := e.spawnBlocking("")
	code, b = e.do("POST", "/api/chat", `{"sessionKey":"`+sa.SessionKey+`","message":"more","steer":true}`, hdr)
	if code != http.StatusBadRequest || !strings.Contains(b, "main session") {
		t.Errorf("a key on a subagent's session: %d %s, want 400", code, b)
	}
}

// TestChatIdempotencyConcurrent: eight requests with one key at once
// make one turn: one stored message, one answer, every stream ending
// with it.
func TestChatIdempotencyConcurrent(t *testing.T) {
	e := newEnv(t, envOptions{})
	const n = 8
	res := make([]client.TurnResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			st, err := e.c.ChatWithKey(ctx(t), client.ChatRequest{SessionKey: "ava:web:race", Message: "SLOW raced"}, "race")
			if err != nil {
				t.Error(err)
				return
			}
			defer st.Close()
			for {
				ev, err := st.Next()
				if err != nil {
					t.Errorf("stream %d: %v", i, err)
					return
				}
				if ev.Type == client.EventDone {
					must(t, json.Unmarshal(ev.Data, &res[i]))
					return
				}
			}
		})
	}
	wg.Wait()
	for i, r := range res {
		if r.Text != "slow done" {
			t.Errorf("stream %d ended %+v, want the one turn's answer", i, r)
		}
	}
	if got := userMessages(t, e, "ava:web:race"); got != 1 {
		t.Fatalf("%d messages of the person's stored, want 1", got)
	}
}

// TestClientChatRetryMakesOne: the daemon takes a message but its answer
// is lost (a proxy answers 503 in its place); the client's Chat sends it
// again under the same key and reads the first message's turn: one
// message stored, one turn.
func TestClientChatRetryMakesOne(t *testing.T) {
	var attempts atomic.Int32
	e := newEnv(t, envOptions{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/api/chat" || attempts.Add(1) > 1 {
				h.ServeHTTP(w, r)
				return
			}
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			h.ServeHTTP(httptest.NewRecorder(), r) // taken, but the answer is lost
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":"lost"}`, http.StatusServiceUnavailable)
		})
	}})
	start, _, res := e.chat(client.ChatRequest{SessionKey: "ava:web:retry", Message: "SLOW once"})
	if attempts.Load() != 2 || !start.Replayed || res.Text != "slow done" {
		t.Fatalf("%d attempts, start %+v, result %+v; want 2 attempts and the first turn's answer, replayed",
			attempts.Load(), start, res)
	}
	if got := userMessages(t, e, "ava:web:retry"); got != 1 {
		t.Fatalf("%d messages of the person's stored, want 1", got)
	}
}

// TestClientChatStreamBreakResumes: the connection of a chat stream
// breaks after its first event; the client opens it again under the
// same key, reads the same turn to its end without repeating events,
// and the message is stored once.
func TestClientChatStreamBreakResumes(t *testing.T) {
	var attempts atomic.Int32
	e := newEnv(t, envOptions{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/api/chat" || attempts.Add(1) > 1 {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(&breakingWriter{ResponseWriter: w, after: 1}, r)
			panic(http.ErrAbortHandler) // the connection drops
		})
	}})
	start, evs, res := e.chat(client.ChatRequest{SessionKey: "ava:web:break", Message: "SLOW broken"})
	if attempts.Load() != 2 || start.SessionKey != "ava:web:break" || res.Text != "slow done" {
		t.Fatalf("%d attempts, start %+v, result %+v; want 2 and the turn's answer", attempts.Load(), start, res)
	}
	seen := map[uint64]bool{}
	for _, ev := range evs {
		if ev.ID > 0 && seen[ev.ID] {
			t.Fatalf("event %d returned twice", ev.ID)
		}
		seen[ev.ID] = true
	}
	if got := userMessages(t, e, "ava:web:break"); got != 1 {
		t.Fatalf("%d messages of the person's stored, want 1", got)
	}
}

// breakingWriter fails every write after its first `after` writes, as a
// connection that dropped.
type breakingWriter struct {
	http.ResponseWriter
	after  int
	writes int
}

func (b *breakingWriter) Write(p []byte) (int, error) {
	if b.writes++; b.writes > b.after {
		return 0, errors.New("connection dropped")
	}
	return b.ResponseWriter.Write(p)
}

func (b *breakingWriter) Flush() {
	if b.writes <= b.after {
		b.ResponseWriter.(http.Flusher).Flush()
	}
}

func (b *breakingWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

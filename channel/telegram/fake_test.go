package telegram_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBotAPI is a Bot API on 127.0.0.1 that speaks its JSON: getUpdates
// (long polling with offsets), sendMessage, editMessageText,
// sendChatAction and answerCallbackQuery, recording every call.
type fakeBotAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	cond    *sync.Cond
	updates []map[string]any // queued updates, by update_id
	calls   []call
	nextMsg int
	tooMany map[string]int // method → how many 429s to answer first
	offsets []int64        // the offsets getUpdates was called with
	changed chan struct{}  // closed and replaced on every recorded call
}

// call is one recorded Bot API call.
type call struct {
	Method string
	Params map[string]any
	At     time.Time // when the fake received it
	MsgID  int       // the message a sendMessage made
}

const fakeToken = "123456:TEST-token"

func newFakeBotAPI(t *testing.T) *fakeBotAPI {
	f := &fakeBotAPI{t: t, tooMany: map[string]int{}, nextMsg: 100, changed: make(chan struct{})}
	f.cond = sync.NewCond(&f.mu)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

func (f *fakeBotAPI) serve(w http.ResponseWriter, r *http.Request) {
	prefix := "/bot" + fakeToken + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, prefix)
	params := map[string]any{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &params)
	} else if err := r.ParseMultipartForm(1 << 20); err == nil {
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
	}
	f.mu.Lock()
	if n := f.tooMany[method]; n > 0 {
		f.tooMany[method] = n - 1
		f.record(method, params)
		f.mu.Unlock()
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}`)
		return
	}
	if method == "getUpdates" {
		f.getUpdates(w, r, params)
		return
	}
	f.record(method, params)
	result := f.result(method, params)
	if method == "sendMessage" {
		f.calls[len(f.calls)-1].MsgID = f.nextMsg
	}
	f.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"ok": true, "result": result})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// record appends a call (f.mu held).
func (f *fakeBotAPI) record(method string, params map[string]any) {
	f.calls = append(f.calls, call{Method: method, Params: params, At: time.Now()})
	close(f.changed)
	f.changed = make(chan struct{})
}

// result is a method's answer (f.mu held).
func (f *fakeBotAPI) result(method string, params map[string]any) any {
	switch method {
	case "sendMessage", "editMessageText":
		id := params["message_id"]
		if method == "sendMessage" {
			f.nextMsg++
			id = f.nextMsg
		}
		return map[string]any{"message_id": num(id), "date": time.Now().Unix(), "text": params["text"],
			"chat": map[string]any{"id": num(params["chat_id"]), "type": "private"}}
	}
	return true
}

// getUpdates answers with the queued updates from offset on, waiting up
// to the poll timeout for one (f.mu held; released).
func (f *fakeBotAPI) getUpdates(w http.ResponseWriter, r *http.Request, params map[string]any) {
	offset := int64(num(params["offset"]))
	f.offsets = append(f.offsets, offset)
	deadline := time.Now().Add(time.Duration(num(params["timeout"])) * time.Second)
	stop := time.AfterFunc(time.Until(deadline), func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
	defer stop.Stop()
	var out []map[string]any
	for {
		out = out[:0]
		for _, u := range f.updates {
			if int64(num(u["update_id"])) >= offset {
				out = append(out, u)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) || r.Context().Err() != nil {
			break
		}
		f.cond.Wait()
	}
	f.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"ok": true, "result": out})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// push queues an update.
func (f *fakeBotAPI) push(u map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, u)
	f.cond.Broadcast()
}

// message builds a text message update.
func message(id int64, chat, user int64, text string) map[string]any {
	return map[string]any{"update_id": id, "message": map[string]any{"message_id": id, "date": time.Now().Unix(),
		"text": text, "chat": map[string]any{"id": chat, "type": "private"},
		"from": map[string]any{"id": user, "is_bot": false, "first_name": "P", "username": "person"}}}
}

// waitFor waits until cond holds over the recorded calls, or fails.
func (f *fakeBotAPI) waitFor(what string, cond func([]call) bool) []call {
	f.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		f.mu.Lock()
		calls := append([]call(nil), f.calls...)
		changed := f.changed
		f.mu.Unlock()
		if cond(calls) {
			return calls
		}
		select {
		case <-changed:
		case <-deadline:
			f.t.Fatalf("timed out waiting for %s; calls: %+v", what, calls)
		}
	}
}

// texts are the texts of the calls of method to chat.
func texts(calls []call, method string, chat int64) []string {
	var out []string
	for _, c := range calls {
		if c.Method == method && int64(num(c.Params["chat_id"])) == chat {
			out = append(out, fmt.Sprint(c.Params["text"]))
		}
	}
	return out
}

// shown are the texts sent to chat or edited into its messages, in order.
func shown(calls []call, chat int64) []string {
	var out []string
	for _, c := range calls {
		if (c.Method == "sendMessage" || c.Method == "editMessageText") && int64(num(c.Params["chat_id"])) == chat {
			out = append(out, fmt.Sprint(c.Params["text"]))
		}
	}
	return out
}

func count(calls []call, method string) int {
	n := 0
	for _, c := range calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case string:
		var f float64
		fmt.Sscan(x, &f)
		return f
	}
	return 0
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// resetCalls forgets the recorded calls.
func (f *fakeBotAPI) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

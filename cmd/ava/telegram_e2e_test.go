package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestServeRunsTelegram starts the real daemon with a bot token and the
// Bot API pointed at a minimal fake on 127.0.0.1: an allowed chat's
// message is answered in its own session, which the API lists.
func TestServeRunsTelegram(t *testing.T) {
	var mu sync.Mutex
	sent := []string{}
	delivered := false
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch method {
		case "getUpdates":
			if delivered {
				time.Sleep(200 * time.Millisecond) // an empty long poll
				fmt.Fprint(w, `{"ok":true,"result":[]}`)
				return
			}
			delivered = true
			fmt.Fprintf(w, `{"ok":true,"result":[{"update_id":1,"message":{"message_id":1,"date":%d,"text":"hello",
				"chat":{"id":4242,"type":"private"},"from":{"id":7,"is_bot":false,"first_name":"P"}}}]}`, time.Now().Unix())
		case "sendMessage", "editMessageText":
			answerSent(w, r, func(text string) int { sent = append(sent, text); return len(sent) })
		default:
			fmt.Fprint(w, `{"ok":true,"result":true}`)
		}
	}))
	defer api.Close()
	env, _ := daemonEnv(t)
	env = append(env, "TELEGRAM_BOT_TOKEN=1:fake", "AVA_TELEGRAM_API_URL="+api.URL, "AVA_TELEGRAM_ALLOWED=4242")
	d := startDaemon(t, env)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(sent, "|")
		mu.Unlock()
		if strings.Contains(got, "hello back") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer in the chat; sent %q", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sessions, err := d.c.Sessions(bg(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range sessions {
		found = found || s.Key == "ava:telegram:4242"
	}
	if !found {
		t.Fatalf("the chat's session is not listed: %+v", sessions)
	}
	// What the daemon said at start-up, read once it has stopped.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-d.done
	if !strings.Contains(d.stderr.String(), "Telegram: long polling; serving chats and users 4242") {
		t.Fatalf("start-up does not say how Telegram runs:\n%s", d.stderr)
	}
}

// answerSent answers a fake Bot API's sendMessage or editMessageText as
// Telegram does (the message, in chat 4242), after record keeps its text
// and says how many messages were sent so far.
func answerSent(w http.ResponseWriter, r *http.Request, record func(text string) int) {
	_ = r.ParseMultipartForm(1 << 20)
	text := r.FormValue("text")
	n := record(text)
	b, _ := json.Marshal(map[string]any{"ok": true, "result": map[string]any{"message_id": 10 + n,
		"date": time.Now().Unix(), "chat": map[string]any{"id": 4242, "type": "private"}, "text": text}})
	w.Write(b)
}

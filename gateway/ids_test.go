package gateway_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestEmptyIDsAreBadRequests: an empty ID ("S-", "P-", "Q-", a subagent
// key with no ID) and a blank answer are the client's mistake: 400 with
// a message saying what is missing, on every route that takes an ID.
func TestEmptyIDsAreBadRequests(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/subagents/S-", ""},
		{"GET", "/api/subagents/s-", ""},
		{"GET", "/api/subagents/%20", ""},
		{"GET", "/api/sessions/ava:subagent:S-", ""},
		{"GET", "/api/chat/stream?sessionKey=" + url.QueryEscape("ava:subagent:S-"), ""},
		{"POST", "/api/chat", `{"sessionKey":"ava:subagent:S-","message":"hi"}`},
		{"POST", "/api/chat/stop", `{"sessionKey":"ava:subagent:S-"}`},
		{"POST", "/api/spawns/P-/confirm", `{"decision":"yes"}`},
		{"POST", "/api/spawns/S-/confirm", `{"decision":"yes"}`},
		{"POST", "/api/spawns/%20/confirm", `{"decision":"yes"}`},
		{"POST", "/api/questions/Q-/answer", `{"answer":"yes"}`},
		{"POST", "/api/questions/S-/answer", `{"answer":"yes"}`},
		{"POST", "/api/questions/%20/answer", `{"answer":"yes"}`},
		{"POST", "/api/questions/Q-abcdef/answer", `{"answer":"   "}`},
		{"POST", "/api/questions/Q-abcdef/answer", `{"answer":"\n\t"}`},
	} {
		code, body := e.do(c.method, c.path, c.body, nil)
		if code != 400 || !strings.Contains(body, "empty") {
			t.Errorf("%s %s %s: %d %s, want 400 saying what is empty", c.method, c.path, c.body, code, body)
		}
	}
}

package gateway_test

import (
	"testing"

	"github.com/avaagent/ava/gateway/client"
)

// A session is titled by its first message, and PATCH /api/sessions/{key}
// renames it: the list and the session show the new title; an empty
// title is 400, an unknown session 404, a subagent's session 400.
func TestSessionTitleAndRename(t *testing.T) {
	e := newEnv(t, envOptions{})
	const key = "ava:web:titled"
	e.chat(client.ChatRequest{SessionKey: key, Message: "hello\nand more on a second line"})
	got, err := e.c.Session(ctx(t), key)
	must(t, err)
	if got.Title != "hello" {
		t.Fatalf("title %q, want the first line of the first message", got.Title)
	}
	code, body := e.do("PATCH", "/api/sessions/"+key, `{"title":"  My   reading list "}`, nil)
	if code != 200 {
		t.Fatalf("rename: %d %s", code, body)
	}
	e.chat(client.ChatRequest{SessionKey: key, Message: "again"})
	list, err := e.c.Sessions(ctx(t))
	must(t, err)
	if len(list) != 1 || list[0].Title != "My reading list" || list[0].UpdatedAt.IsZero() {
		t.Fatalf("sessions %+v", list)
	}
	code, body = e.do("PATCH", "/api/sessions/"+key, `{"title":" "}`, nil)
	wantError(t, code, body, 400, "empty")
	code, body = e.do("PATCH", "/api/sessions/ava:web:nobody", `{"title":"x"}`, nil)
	wantError(t, code, body, 404, "not found")
	code, body = e.do("PATCH", "/api/sessions/ava:subagent:S-abcdef", `{"title":"x"}`, nil)
	wantError(t, code, body, 400, "subagent")
}

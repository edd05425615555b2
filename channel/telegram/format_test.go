package telegram_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entity is a message entity as the fake Bot API received it.
type entity struct {
	Type     string `json:"type"`
	Offset   int    `json:"offset"`
	Length   int    `json:"length"`
	URL      string `json:"url,omitempty"`
	Language string `json:"language,omitempty"`
}

// TestAnswerMarkdownSentAsEntities: the answer's Markdown reaches
// Telegram as its text plus entities (bold, code, a code block with its
// language, a link), with offsets in UTF-16 code units (the emoji before
// the bold word counts two), never as parse_mode; the javascript: link
// and the raw HTML stay text.
func TestAnswerMarkdownSentAsEntities(t *testing.T) {
	e := newEnv(t)
	_, stop := e.run(e.cfg)
	defer stop()
	e.api.push(message(1, chatID, userID, "ENTITIES please"))
	const want = "😀 bold and code\n\nx := 1\n\n• item docs bad <b>raw</b>"
	var got []call
	e.api.waitFor("the formatted answer", func(cs []call) bool {
		got = nil
		for _, c := range cs {
			if (c.Method == "sendMessage" || c.Method == "editMessageText") && c.Params["text"] == want {
				got = append(got, c)
			}
		}
		return len(got) > 0
	})
	last := got[len(got)-1]
	if last.Params["parse_mode"] != nil {
		t.Fatalf("sent with parse_mode: %+v", last.Params)
	}
	var ents []entity
	if err := json.Unmarshal([]byte(fmt.Sprint(last.Params["entities"])), &ents); err != nil {
		t.Fatalf("entities %v: %v", last.Params["entities"], err)
	}
	wantEnts := []entity{
		{Type: "bold", Offset: 3, Length: 4},
		{Type: "code", Offset: 12, Length: 4},
		{Type: "pre", Offset: 18, Length: 6, Language: "go"},
		{Type: "text_link", Offset: 33, Length: 4, URL: "https://example.com/d"},
	}
	if diff := cmp.Diff(wantEnts, ents); diff != "" {
		t.Fatalf("entities (-want +got):\n%s", diff)
	}
	waitHandled(t, e, 1)
}

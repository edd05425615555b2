package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/avaagent/ava/llm"
)

// TestAssistantItemsTwoMessagesInARow: two message items one after the
// other go back as two items, not as an error that would end the
// conversation.
func TestAssistantItemsTwoMessagesInARow(t *testing.T) {
	var blocks []llm.Block
	for _, id := range []string{"msg_a", "msg_b"} {
		raw := json.RawMessage(fmt.Sprintf(`{"type":"message","id":%q,"role":"assistant","status":"completed","content":[{"type":"output_text","text":"%s text","annotations":[]}]}`, id, id))
		blocks = append(blocks, llm.Block{Type: llm.BlockText, Text: id + " text", Raw: raw, Provider: responsesProvider})
	}
	items, err := assistantItems(llm.Message{Role: llm.RoleAssistant, Content: blocks})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(items)
	if len(items) != 2 || !strings.Contains(string(out), `"id":"msg_a"`) || !strings.Contains(string(out), `"id":"msg_b"`) {
		t.Fatalf("items = %s", out)
	}
}

// TestSearchActionQueries: the current API puts a search's terms in
// queries; they are the activity's query, and an action with no terms
// yet is not reported as known.
func TestSearchActionQueries(t *testing.T) {
	in, known := actionInput(&searchAction{Type: "search", Queries: []string{"podcast pricing", "whisper cost"}})
	if !known || !strings.Contains(string(in), `"query":"podcast pricing"`) || !strings.Contains(string(in), "whisper cost") {
		t.Fatalf("%s %v", in, known)
	}
	if in, known := actionInput(&searchAction{Type: "search"}); known {
		t.Fatalf("a bare action is known: %s", in)
	}
}

// TestResponseStopCutCallFirst: a response cut at the output limit is
// cut short even when it holds a function call (its arguments may be
// cut).
func TestResponseStopCutCallFirst(t *testing.T) {
	r := &responses.Response{Status: "incomplete"}
	r.IncompleteDetails.Reason = "max_output_tokens"
	if got := responseStop(r, true); got != llm.StopMaxTokens {
		t.Fatalf("stop = %q", got)
	}
	if got := rawResponseStop(r); got != "max_output_tokens" {
		t.Fatalf("raw stop = %q, want the incomplete reason", got)
	}
}

// TestMalformedItems: a function call without a call_id (its output
// could not name it) and a search call without an id are errors.
func TestMalformedItems(t *testing.T) {
	for _, it := range []responseItem{{Type: "function_call", Name: "f", Arguments: "{}"}, {Type: "web_search_call"}} {
		if _, err := itemBlocks(it, json.RawMessage(`{}`)); err == nil {
			t.Errorf("%+v accepted", it)
		}
	}
}

// TestCitationsBounded: a hostile answer with thousands of annotations
// over a long text gives a bounded number of citations, each with a
// bounded cited text.
func TestCitationsBounded(t *testing.T) {
	text := strings.Repeat("ä", 200_000)
	var anns []json.RawMessage
	for i := range 2000 {
		anns = append(anns, json.RawMessage(fmt.Sprintf(`{"type":"url_citation","url":"https://e.com/%d","start_index":0,"end_index":199999}`, i)))
	}
	got := urlCitations(text, anns)
	if len(got) != llm.MaxCitationsPerBlock {
		t.Fatalf("%d citations", len(got))
	}
	if n := len([]rune(got[0].CitedText)); n != llm.MaxCitedText+1 || !strings.HasSuffix(got[0].CitedText, "…") {
		t.Fatalf("cited text of %d characters", n)
	}
}

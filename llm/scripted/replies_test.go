package scripted_test

import (
	"context"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/tool"
)

const repliesScript = `
conversations:
  - replies:
      - when: {result: {status: awaiting_confirmation, estimate.max_cents: "^5$"}}
        text: "proposed {{result.pending_id}} at most {{result.estimate.max_cents}}¢ ({{result.missing}})"
      - when: {result: {}}
        text: "tool said {{last_result}}"
      - when: {message: 'Subagent (?P<id>S-[0-9a-f]{6}) finished: status=(?P<status>\w+)'}
        text: "{{match.id}} ended {{match.status}} {{match.nothing}}; you first said {{input}}"
      - text: "asking"
        tool_calls: [{name: spawn_subagent, args: {role: researcher}}]
`

// play answers msgs with the script and returns the text and the tool
// calls' names.
func play(t *testing.T, p *scripted.Provider, msgs []llm.Message) (llm.Message, string) {
	t.Helper()
	resp, err := p.Stream(context.Background(), &llm.Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Message, resp.Message.TextContent()
}

// Replies are chosen by what arrived since the model last spoke (a tool
// result's fields, a message's text), however many turns came before,
// and their templates read the tool result's fields and the regexp's
// named groups.
func TestRepliesFollowWhatArrived(t *testing.T) {
	s, err := scripted.Parse("t", []byte(repliesScript))
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.NewWithScript(s)
	msgs := []llm.Message{llm.UserText("hello")}
	ask, text := play(t, p, msgs)
	if text != "asking" || len(ask.ToolCalls()) != 1 {
		t.Fatalf("first reply %q %+v", text, ask)
	}
	result := func(content string) llm.Message {
		return llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult(ask.ToolCalls()[0].ToolCallID, tool.Untrusted("tool spawn_subagent", content), false)}}
	}
	proposal := `{"pending_id":"P-1a2b3c","status":"awaiting_confirmation","estimate":{"max_cents":5}}`
	msgs = append(msgs, ask, result(proposal))
	reply, text := play(t, p, msgs)
	if text != "proposed P-1a2b3c at most 5¢ ()" {
		t.Fatalf("after the proposal: %q", text)
	}
	// A field that does not match, or a result that is not JSON, falls
	// to the next reply.
	for _, other := range []string{`{"pending_id":"P-1a2b3c","status":"awaiting_confirmation","estimate":{"max_cents":6}}`, "refused: too many"} {
		if _, text := play(t, p, append(msgs[:2:2], result(other))); text != "tool said "+other {
			t.Errorf("result %s: %q", other, text)
		}
	}
	// The next request holds the old tool result, but what arrived since
	// is the person's words and a subagent's result.
	msgs = append(msgs, reply, llm.UserText("[Subagent] "+tool.Untrusted("subagent S-00aa11", "[Task: demo]\nSubagent S-00aa11 finished: status=success, 1s")), llm.UserText("what did it find?"))
	if _, text := play(t, p, msgs); text != "S-00aa11 ended success ; you first said hello" {
		t.Fatalf("after the result: %q", text)
	}
	// Anything else starts over, however long the conversation.
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("x")}}, llm.UserText("again"))
	if _, text := play(t, p, msgs); text != "asking" {
		t.Fatalf("a new message: %q", text)
	}
}

// A conversation of replies none of which holds says so; a bad
// condition is refused when the script is read.
func TestRepliesNoneHoldsAndBadConditions(t *testing.T) {
	s, err := scripted.Parse("t", []byte("conversations:\n  - replies:\n      - when: {message: never}\n        text: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, text := play(t, scripted.NewWithScript(s), []llm.Message{llm.UserText("hi")}); !strings.Contains(text, "no reply") {
		t.Fatalf("%q", text)
	}
	for src, want := range map[string]string{
		"conversations:\n  - replies: [{when: {message: \"(\"}, text: x}]\n":          "when: message",
		"conversations:\n  - replies: [{when: {result: {status: \"(\"}}, text: x}]\n": "when: result: status",
		"conversations:\n  - turns: [{when: {message: x}, text: x}]\n":                "when is for replies",
		"conversations:\n  - turns: [{text: x}]\n    replies: [{text: y}]\n":          "both turns and replies",
		"conversations:\n  - replies: [{when: {mesage: x}, text: x}]\n":               "mesage",
		"conversations:\n  - replies: [{text: x, tool_calls: [{args: {}}]}]\n":        "no name",
	} {
		if _, err := scripted.Parse("f.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}

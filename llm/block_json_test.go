package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
)

// A tool call whose arguments are not valid JSON must still encode, and
// decode to the arguments exactly as the model sent them.
func TestBlockJSONKeepsInvalidToolArguments(t *testing.T) {
	for _, args := range []string{`{"path": "a",, }`, `{"q":`, `not json`, "caf\u00e9 \"x\"\n"} {
		in := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Text("calling"),
			{Type: llm.BlockToolCall, ToolCallID: "c1", ToolName: "read_file", Input: json.RawMessage(args)},
		}}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("%q: marshal: %v", args, err)
		}
		if !strings.Contains(string(b), `"input_raw"`) || strings.Contains(string(b), `"input":`) {
			t.Errorf("%q: encoded as %s, want input_raw and no input", args, b)
		}
		var out llm.Message
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%q: unmarshal: %v", args, err)
		}
		got := out.Content[1]
		if string(got.Input) != args || got.ToolName != "read_file" || got.ToolCallID != "c1" || got.Type != llm.BlockToolCall {
			t.Errorf("%q: round trip gave %+v (input %q)", args, got, got.Input)
		}
		if out.Content[0].Text != "calling" {
			t.Errorf("%q: text block lost: %+v", args, out.Content[0])
		}
	}
}

// Valid arguments keep the encoding stored before input_raw existed, so
// stored conversations still read back.
func TestBlockJSONValidArgumentsUnchanged(t *testing.T) {
	blk := llm.Block{Type: llm.BlockToolCall, ToolCallID: "c1", ToolName: "t", Input: json.RawMessage(`{"a":1}`)}
	b, err := json.Marshal(blk)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"tool_call","tool_call_id":"c1","tool_name":"t","input":{"a":1}}`; string(b) != want {
		t.Errorf("encoded %s, want %s", b, want)
	}
	var back llm.Block
	if err := json.Unmarshal(b, &back); err != nil || string(back.Input) != `{"a":1}` {
		t.Errorf("decoded %+v, %v", back, err)
	}
	var empty llm.Block
	if err := json.Unmarshal([]byte(`{"type":"text","text":"hi"}`), &empty); err != nil || empty.Input != nil || empty.Text != "hi" {
		t.Errorf("text block decoded %+v, %v", empty, err)
	}
}

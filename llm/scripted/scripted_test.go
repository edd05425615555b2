package scripted_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
)

func TestConversationsAndTurns(t *testing.T) {
	s, err := scripted.Parse("t", []byte(`
conversations:
  - match: "(?i)weather"
    turns:
      - thinking: "hmm"
        text: "Let me look."
        tool_calls: [{name: web_search, args: {query: paris}}, {name: broken, raw_args: "{x"}]
        usage: {input: 7, output: 3}
      - text: "Result: {{last_result}}"
  - turns:
      - text: "You said {{input}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.NewWithScript(s)
	var deltas []llm.Delta
	resp, err := p.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("Weather today?")}}, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 || string(calls[0].Input) != `{"query":"paris"}` || string(calls[1].Input) != "{x" || resp.StopReason != llm.StopToolUse ||
		resp.Usage != (llm.Usage{InputTokens: 7, OutputTokens: 3}) || resp.Message.Content[0].Type != llm.BlockThinking {
		t.Fatalf("%+v", resp)
	}
	if deltas[0].Type != llm.DeltaThinking {
		t.Fatalf("deltas %+v", deltas)
	}
	msgs := []llm.Message{llm.UserText("Weather today?"), resp.Message, {Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult(calls[0].ToolCallID, "sunny", false)}}}
	resp, _ = p.Stream(context.Background(), &llm.Request{Messages: msgs}, nil)
	if resp.Message.TextContent() != "Result: sunny" {
		t.Fatalf("%q", resp.Message.TextContent())
	}
	resp, _ = p.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, nil)
	if resp.Message.TextContent() != "You said hi" || resp.Usage.OutputTokens == 0 {
		t.Fatalf("%+v", resp)
	}
}

func TestScriptErrorsAndDelays(t *testing.T) {
	s, _ := scripted.Parse("t", []byte("turns:\n  - error: boom\n"))
	if _, err := scripted.NewWithScript(s).Stream(context.Background(), &llm.Request{}, nil); !errors.Is(err, scripted.ErrScripted) {
		t.Fatal(err)
	}
	s, _ = scripted.Parse("t", []byte("turns:\n  - text: late\n    delay: 1h\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := scripted.NewWithScript(s).Stream(ctx, &llm.Request{}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

func TestBadScriptsNameTheProblem(t *testing.T) {
	for src, want := range map[string]string{
		"turns:\n  - txt: hi\n": "unknown field",
		"conversations: []\n":   "no conversations",
		"conversations:\n  - match: \"(\"\n    turns: [{text: x}]\n": "match",
		"turns:\n  - tool_calls: [{args: {}}]\n":                     "no name",
	} {
		if _, err := scripted.Parse("f.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "f.yaml") {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	if _, err := scripted.Load("/no/such/script.yaml"); err == nil {
		t.Error("missing file loaded")
	}
	if _, err := scripted.Load("demo"); err != nil {
		t.Errorf("built-in demo: %v", err)
	}
}

// A turn longer than the request's output limit is cut there, as a real
// provider cuts it.
func TestOutputLimitCutsTheTurn(t *testing.T) {
	s, err := scripted.Parse("t", []byte("turns:\n  - text: \""+strings.Repeat("é", 50)+"\"\n    tool_calls: [{name: x}]\n    usage: {input: 10, output: 5000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := scripted.NewWithScript(s).Stream(context.Background(), &llm.Request{MaxTokens: 7, Messages: []llm.Message{llm.UserText("go")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := resp.Message.TextContent()
	if resp.StopReason != llm.StopMaxTokens || resp.Usage.OutputTokens != 7 || len(resp.Message.ToolCalls()) != 0 ||
		len(text) > 28 || !utf8.ValidString(text) || text == "" {
		t.Fatalf("stop %s usage %+v text %q (%d bytes)", resp.StopReason, resp.Usage, text, len(text))
	}
	resp, _ = scripted.NewWithScript(s).Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("go")}}, nil)
	if resp.StopReason != llm.StopToolUse || resp.Usage.OutputTokens != 5000 {
		t.Fatalf("no limit: stop %s usage %+v", resp.StopReason, resp.Usage)
	}
}

// Every text delta is whole characters: one cut inside a multi-byte
// character reached the person as U+FFFD ("• Cost" printed "��� Cost").
func TestTextDeltasAreWholeCharacters(t *testing.T) {
	p := scripted.New()
	p.ChunkSize = 2
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte("turns:\n  - text: \"• Time, • Cost: 0.6¢ — ok\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	_, err := p.Stream(context.Background(), &llm.Request{Model: path, Messages: []llm.Message{llm.UserText("hi")}}, func(d llm.Delta) {
		if d.Type == llm.DeltaText {
			if !utf8.ValidString(d.Text) {
				t.Errorf("delta %q is not whole characters", d.Text)
			}
			got.WriteString(d.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "• Time, • Cost: 0.6¢ — ok" {
		t.Fatalf("deltas joined: %q", got.String())
	}
}

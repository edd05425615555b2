package terminal_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
)

// TestMarkdownForATerminal: Markdown becomes ANSI styles, lists bullets,
// tables aligned columns; raw HTML stays text, an unsafe link is not
// one, and the model's own escape sequences never reach the terminal.
func TestMarkdownForATerminal(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"bold and italic", "a **b** *c*", "a \x1b[0;1mb\x1b[0m \x1b[0;3mc\x1b[0m"},
		{"nested", "**b *i***", "\x1b[0;1mb \x1b[0;3;1mi\x1b[0m"},
		{"code", "run `go test`", "run \x1b[0;36mgo test\x1b[0m"},
		{"fence", "```go\nx := 1\ny := 2\n```", "\x1b[0;36mx := 1\ny := 2\x1b[0m"},
		{"heading", "# Title\n\ntext", "\x1b[0;1mTitle\x1b[0m\n\ntext"},
		{"list", "- one\n- two\n  1. three", "• one\n• two\n  1. three"},
		{"table", "| a | bb |\n|---|--:|\n| long | 1 |", "\x1b[0;36ma    │ bb\n─────┼───\nlong │  1\x1b[0m"},
		{"link", "see [docs](https://example.com/d)", "see \x1b[0;4mdocs\x1b[0m (https://example.com/d)"},
		{"bare link", "see https://example.com", "see \x1b[0;4mhttps://example.com\x1b[0m"},
		{"javascript link", "[x](javascript:alert(1))", "x"},
		{"image", "![a cat](https://r.example/cat.png)", "\x1b[0;4mimage: a cat\x1b[0m (https://r.example/cat.png)"},
		{"raw html", "<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"},
		{"escape sequences", "hi \x1b]0;pwned\x07 **b\x1b[2J**", "hi ]0;pwned \x1b[0;1mb[2J\x1b[0m"},
		{"quote", "> said\n> this", "> said\n> this"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, terminal.Markdown(c.src)); diff != "" {
				t.Errorf("Markdown(%q) (-want +got):\n%s", c.src, diff)
			}
		})
	}
}

// answerDeltas stream an answer in pieces that cut through its blocks.
var answerDeltas = []string{"Some **bo", "ld** text.\n", "\n```go\nx := 1\n", "\n```\n\n- a\n- ", "b"}

// TestPrintTurnStylesOnATerminal: on a terminal the streamed answer's
// Markdown is rendered (bold, a code block, bullets); with NO_COLOR, and
// when stdout is not a terminal, it is printed as written.
func TestPrintTurnStylesOnATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	got := printOnPTY(t)
	for _, want := range []string{"Some \x1b[0;1mbold\x1b[0m text.", "\x1b[0;36mx := 1\x1b[0m", "• a\r\n• b"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	if strings.Contains(got, "**") || strings.Contains(got, "```") {
		t.Errorf("terminal output shows the Markdown's marks:\n%q", got)
	}

	t.Setenv("NO_COLOR", "1")
	if got := printOnPTY(t); !strings.Contains(got, "Some **bold** text.") || strings.Contains(got, "\x1b[") {
		t.Errorf("NO_COLOR: want the answer as written, got:\n%q", got)
	}
	var plain strings.Builder
	printTurn(t, &plain)
	if want := strings.Join(answerDeltas, "") + "\n"; plain.String() != want {
		t.Errorf("not a terminal: got %q, want %q", plain.String(), want)
	}
}

// printOnPTY prints the streamed answer to a pseudo-terminal and returns
// what the terminal received.
func printOnPTY(t *testing.T) string {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(&out, ptmx)
	}()
	printTurn(t, tty)
	tty.Close()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal's output did not end")
	}
	return out.String()
}

// printTurn runs PrintTurn over a session whose answer streams as
// answerDeltas, writing the answer to stdout.
func printTurn(t *testing.T, stdout io.Writer) {
	t.Helper()
	const key = "ava:cli:markdown"
	hub := event.NewHub(event.NewMemoryLog())
	sub := hub.Follow(key, 0)
	defer sub.Close()
	var last uint64
	publish := func(typ event.Type, content any) {
		ev := event.New(typ, content)
		ev.Session, ev.Agent = key, event.OrchestratorID
		out, err := hub.Publish(ev)
		if err != nil {
			t.Fatal(err)
		}
		last = out.Seq
	}
	for _, d := range answerDeltas {
		publish(event.TextDelta, event.TextContent{Text: d})
	}
	publish(event.AssistantMessage, event.TextContent{Text: strings.Join(answerDeltas, "")})
	until := make(chan uint64, 1)
	until <- last
	terminal.PrintTurn(context.Background(), sub, until, stdout, io.Discard, false)
}

// TestStyledOnlyOnATerminal: a buffer is never styled; a terminal is,
// unless NO_COLOR is set or TERM is dumb.
func TestStyledOnlyOnATerminal(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	file, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if terminal.Styled(&bytes.Buffer{}, env("TERM", "xterm")) || terminal.Styled(file, env("TERM", "xterm")) {
		t.Error("a buffer or a file is styled")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if !terminal.Styled(tty, env("TERM", "xterm")) || terminal.Styled(tty, env("NO_COLOR", "1")) || terminal.Styled(tty, env("TERM", "dumb")) {
		t.Error("a terminal: want styled unless NO_COLOR or TERM=dumb")
	}
}

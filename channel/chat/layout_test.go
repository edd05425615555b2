package chat

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

// TestWrapKeepsWordsAndIndent: a long line wraps at spaces, never inside
// a word, and continues under its label or indentation.
func TestWrapKeepsWordsAndIndent(t *testing.T) {
	got := wrapText("ava› the quick brown fox jumps over the lazy dog again\n     and a second indented line goes on", 24)
	want := "ava› the quick brown fox\n     jumps over the lazy\n     dog again\n     and a second\n     indented line goes\n     on"
	if got != want {
		t.Fatalf("wrapped:\n%s\nwant:\n%s", got, want)
	}
	if got := wrapText("short", 80); got != "short" {
		t.Fatalf("a short line changed: %q", got)
	}
}

// TestFooterFitsTheWidth: every line of the footer (the streamed
// preview, a subagent's status, the question) fits the screen, so the
// renderer's count of its rows is the terminal's.
func TestFooterFitsTheWidth(t *testing.T) {
	m := newModel(context.Background(), Options{Backend: &fakeBackend{}})
	m.Update(tea.WindowSizeMsg{Width: 40, Height: 30})
	m.apply(ev(event.TextDelta, event.TextContent{Text: strings.Repeat("several words of an answer ", 10)}))
	m.subagents = []ava.Subagent{{ID: "S-7f3a2b", Role: "web_crawler", Status: lifecycle.Running,
		Figures: ava.Figures{Elapsed: time.Minute, Tokens: 12345, CostCents: 3.14}, Activity: "reading a page with a long title"}}
	m.pending = []string{"P-0a0b0c"}
	for line := range strings.Lines(m.View()) {
		if w := ansi.StringWidth(strings.TrimRight(line, "\n")); w > 40 {
			t.Errorf("a footer line %d wide on a 40-column screen: %q", w, line)
		}
	}
}

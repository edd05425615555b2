package terminal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

func TestStatusLine(t *testing.T) {
	st := ava.Subagent{ID: "S-7f3a2b", Role: "web_crawler", Status: lifecycle.Running,
		Figures:  ava.Figures{Elapsed: 45 * time.Second, Wall: time.Minute, Tokens: 12_345, CostCents: 3.14},
		Activity: "reading example.com"}
	want := "🔍 S-7f3a2b WebCrawler running (45s, 12k tokens, 3.14¢): reading example.com"
	if got := terminal.StatusLine(st); got != want {
		t.Errorf("running: %q, want %q", got, want)
	}
	st.Stalled = true
	if got := terminal.StatusLine(st); !strings.HasPrefix(got, "⏸ S-7f3a2b WebCrawler stalled") {
		t.Errorf("stalled: %q", got)
	}
	st.Stalled, st.Status = false, lifecycle.Queued
	if got := terminal.StatusLine(st); !strings.HasPrefix(got, "⏳ ") {
		t.Errorf("queued: %q", got)
	}
	st.Status, st.Tokens = lifecycle.CostExceeded, 2_500_000
	if got := terminal.StatusLine(st); !strings.HasPrefix(got, "❌ ") || strings.Contains(got, "reading") || !strings.Contains(got, "2.5M tokens") {
		t.Errorf("capped: %q", got)
	}
}

func TestEventLine(t *testing.T) {
	done := event.New(event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-1", Role: "code_reviewer",
		Status: lifecycle.Success, DurationMs: 12_000, CostCents: 4})
	if got, want := terminal.EventLine("code_reviewer", done), "✅ Subagent [CodeReviewer]: Complete (12s, 4.00¢)"; got != want {
		t.Errorf("complete: %q, want %q", got, want)
	}
	progress := event.New(event.SubagentProgress, event.SubagentProgressContent{SubagentID: "S-1", Role: "web_crawler",
		Activity: "reading example.com", ElapsedMs: 45_000, Tokens: 12_400})
	if got, want := terminal.EventLine("web_crawler", progress), "⏳ Subagent [WebCrawler] still working: reading example.com (45s, 12k tokens)"; got != want {
		t.Errorf("progress: %q, want %q", got, want)
	}
	if got := terminal.EventLine("x", event.New(event.TextDelta, event.TextContent{Text: "hi"})); got != "" {
		t.Errorf("text delta rendered as %q", got)
	}
}

// lines is a writer that hands each write to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) { l <- string(p); return len(p), nil }

func TestFollowSubagent(t *testing.T) {
	hub := event.NewHub(event.NewMemoryLog())
	sub := hub.Subscribe("ava:subagent:S-000001", 0)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(lines, 4)
	done := make(chan struct{})
	go func() { defer close(done); terminal.FollowSubagent(ctx, sub, "researcher", out) }()
	call := event.New(event.ToolCall, event.ToolCallContent{Name: "read_file", Args: []byte(`{"path":"a.go"}`)})
	call.Session = "ava:subagent:S-000001"
	if _, err := hub.Publish(call); err != nil {
		t.Fatal(err)
	}
	got := <-out
	cancel()
	<-done
	if want := "🔍 Subagent [Researcher]: read_file {\"path\":\"a.go\"}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPrintableDropsEscapes(t *testing.T) {
	in := "ok\x1b]52;c;ZXZpbA==\x07 and \x1b[2J clear\u009b1m\tend\nline\x7f"
	if got, want := terminal.Printable(in), "ok]52;c;ZXZpbA== and [2J clear1m\tend\nline"; got != want {
		t.Fatalf("Printable = %q, want %q", got, want)
	}
	if s := "plain ünïcode\n"; terminal.Printable(s) != s {
		t.Fatal("clean text changed")
	}
}

// The completion line and the status line (ava ps, the chat's list) read
// one active time alike: 1.6 s is "2s" in both, not "1s" in one.
func TestCompletionAndStatusAgreeOnDuration(t *testing.T) {
	for _, d := range []time.Duration{400 * time.Millisecond, 1600 * time.Millisecond, 61_500 * time.Millisecond} {
		done := event.New(event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-1", Role: "researcher",
			Status: lifecycle.Success, DurationMs: d.Milliseconds()})
		st := ava.Subagent{ID: "S-1", Role: "researcher", Status: lifecycle.Success, Figures: ava.Figures{Elapsed: d}}
		want := "(" + terminal.Elapsed(d) + ","
		if got := terminal.EventLine("researcher", done); !strings.Contains(got, want) {
			t.Errorf("%v: completion %q, want %q", d, got, want)
		}
		if got := terminal.StatusLine(st); !strings.Contains(got, want) {
			t.Errorf("%v: status %q, want %q", d, got, want)
		}
	}
}

package chat

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBackend records what the screen asks of it.
type fakeBackend struct {
	mu        sync.Mutex
	confirmed []string
	sent      []string
}

func (f *fakeBackend) Key() string { return "ava:chat:test" }
func (f *fakeBackend) Follow(ctx context.Context, _ func(event.Event)) error {
	<-ctx.Done()
	return nil
}
func (f *fakeBackend) Send(_ context.Context, m string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, m)
	return nil
}
func (f *fakeBackend) SendTo(context.Context, string, string) error { return nil }
func (f *fakeBackend) Stop(context.Context, string) (bool, error)   { return true, nil }
func (f *fakeBackend) Subagents(context.Context) ([]ava.Subagent, error) {
	return nil, nil
}
func (f *fakeBackend) Log(context.Context, string, int) ([]string, error) { return nil, nil }
func (f *fakeBackend) Answer(_ context.Context, id, a string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, "answer "+id+": "+a)
	return nil
}
func (f *fakeBackend) Confirm(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirmed = append(f.confirmed, id)
	return nil
}

func ev(typ event.Type, content any) event.Event {
	b, _ := json.Marshal(content)
	return event.Event{Type: typ, Agent: event.OrchestratorID, Content: b}
}

// TestScreenFoldsThinkingStreamsAndCleans: thinking shows as a count,
// the streamed preview is replaced by the whole answer, escape sequences
// from the model never reach the terminal, and a request that did not
// succeed says how it ended.
func TestScreenFoldsThinkingStreamsAndCleans(t *testing.T) {
	m := newModel(context.Background(), Options{Backend: &fakeBackend{}})
	m.apply(ev(event.ThinkingDelta, event.TextContent{Text: strings.Repeat("x", 1500)}))
	m.apply(ev(event.TextDelta, event.TextContent{Text: "Hel\x1b]0;pwned\x07lo"}))
	if v := m.View(); !strings.Contains(v, "thinking… (1.5k chars)") || !strings.Contains(v, "Hel]0;pwnedlo") || strings.ContainsAny(v, "\x1b\x07") {
		t.Fatalf("footer: %q", v)
	}
	lines, _ := m.apply(ev(event.AssistantMessage, event.TextContent{Text: "Hello\x1b[2J world"}))
	if len(lines) != 1 || lines[0] != "ava› Hello[2J world" || m.streamed.Len() != 0 || m.thinking != 0 {
		t.Fatalf("answer: %q (streamed %q)", lines, m.streamed.String())
	}
	lines, _ = m.apply(ev(event.SessionEnd, event.SessionContent{Status: lifecycle.Cancelled}))
	if len(lines) != 1 || lines[0] != "(the request ended: cancelled)" {
		t.Fatalf("end: %q", lines)
	}
	m.apply(ev(event.SessionState, event.StateContent{State: "running"}))
	if !strings.Contains(m.View(), "Ava is typing") {
		t.Fatalf("no typing indicator: %q", m.View())
	}
}

// TestScreenRendersMarkdownWhenStyled: with Styled the answer's Markdown
// is rendered with terminal styles (each line after the prompt's
// indent), the model's escape sequences still dropped; without it, the
// answer is printed as written.
func TestScreenRendersMarkdownWhenStyled(t *testing.T) {
	answer := ev(event.AssistantMessage, event.TextContent{Text: "**Done**\x1b[2J:\n\n- one\n- two `x`"})
	styled := newModel(context.Background(), Options{Backend: &fakeBackend{}, Styled: true})
	lines, _ := styled.apply(answer)
	want := "ava› \x1b[0;1mDone\x1b[0m[2J:\n     \n     • one\n     • two \x1b[0;36mx\x1b[0m"
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("styled answer: %q, want %q", lines, want)
	}
	plain := newModel(context.Background(), Options{Backend: &fakeBackend{}})
	lines, _ = plain.apply(answer)
	if len(lines) != 1 || lines[0] != "ava› **Done**[2J:\n     \n     - one\n     - two `x`" {
		t.Fatalf("plain answer: %q", lines)
	}
}

// TestScreenProposals: a proposal waits in the footer until decided; with
// Yes it is confirmed at once and never waits.
func TestScreenProposals(t *testing.T) {
	b := &fakeBackend{}
	m := newModel(context.Background(), Options{Backend: b})
	m.apply(ev(event.SpawnProposed, event.SpawnProposedContent{PendingID: "P-abcdef", Text: "Proceed? [Yes/No]"}))
	if !strings.Contains(m.View(), "Proceed with P-abcdef?") {
		t.Fatalf("footer: %q", m.View())
	}
	if cmd := m.command("/yes"); cmd == nil {
		t.Fatal("/yes did nothing")
	} else {
		cmd()
	}
	if len(b.sent) != 1 || b.sent[0] != "yes" {
		t.Fatalf("sent %q", b.sent)
	}
	m.apply(ev(event.SpawnDecided, event.SpawnDecidedContent{PendingID: "P-abcdef", Decision: "confirmed"}))
	if strings.Contains(m.View(), "Proceed with") {
		t.Fatalf("still asks: %q", m.View())
	}

	// A long command's proposal says what it is, and its change is a
	// timeout; "yes" typed goes to the session, which answers it.
	lines, _ := m.apply(ev(event.SpawnProposed, event.SpawnProposedContent{PendingID: "P-b0b0b0", Kind: ava.KindProcess, Role: "run_bash",
		Task: "sleep 120", Text: "run_bash: `sleep 120` — estimated 2 min\nProceed? [Yes/No]"}))
	if len(lines) != 2 || lines[0] != "📝 proposal P-b0b0b0 to run a long run_bash call awaits your answer" || !strings.HasPrefix(lines[1], "run_bash: `sleep 120` — estimated 2 min") {
		t.Fatalf("process proposal lines %q", lines)
	}
	if !strings.Contains(m.View(), `Proceed with P-b0b0b0? y / n / or type a change ("yes but only 30 seconds")`) {
		t.Fatalf("footer: %q", m.View())
	}
	m.apply(ev(event.SpawnDecided, event.SpawnDecidedContent{PendingID: "P-b0b0b0", Decision: "confirmed"}))
	if strings.Contains(m.View(), "Proceed with") || len(m.processes) != 0 {
		t.Fatalf("still asks: %q", m.View())
	}

	yes := newModel(context.Background(), Options{Backend: b, Yes: true})
	_, cmd := yes.apply(ev(event.SpawnProposed, event.SpawnProposedContent{PendingID: "P-123456"}))
	if cmd == nil {
		t.Fatal("--yes did not confirm")
	}
	cmd()
	if len(b.confirmed) != 1 || b.confirmed[0] != "P-123456" || len(yes.pending) != 0 {
		t.Fatalf("confirmed %q, pending %q", b.confirmed, yes.pending)
	}
}

// TestCommandsRefuseBadArguments: malformed IDs get the usage, not a call.
func TestCommandsRefuseBadArguments(t *testing.T) {
	b := &fakeBackend{}
	m := newModel(context.Background(), Options{Backend: b})
	m.printing = true // keep what is printed in the outbox
	for _, c := range []string{"/send nope hi", "/send S-abc", "/stop ../x", "/logs x y", "/yes P-zz", "/answer", "/bogus"} {
		m.outbox = nil
		m.command(c)
		if len(m.outbox) != 1 || !strings.Contains(m.outbox[0], "usage") && !strings.Contains(m.outbox[0], "unknown command") {
			t.Errorf("%s: %q", c, m.outbox)
		}
	}
	if len(b.sent) != 0 {
		t.Fatalf("sent %q", b.sent)
	}
}

// TestScreenCompletionListsSources: a completed subagent's notice lists
// the sources its answer cites, each with its URL.
func TestScreenCompletionListsSources(t *testing.T) {
	m := newModel(context.Background(), Options{Backend: &fakeBackend{}})
	lines, _ := m.apply(ev(event.SubagentComplete, event.SubagentCompleteContent{SubagentID: "S-1", Role: "researcher",
		Status: lifecycle.Success, Summary: "about $0.006 a minute",
		Citations: []event.Citation{{URL: "https://example.com/pricing", Title: "Pricing", CitedText: "$0.006 per minute"}}}))
	if len(lines) != 2 || !strings.Contains(lines[0], "about $0.006 a minute") ||
		lines[1] != "   📎 Sources:\n   1. Pricing — https://example.com/pricing" {
		t.Fatalf("lines: %q", lines)
	}
}

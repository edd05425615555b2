package chat

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

// event applies one of the session's events: what is final is printed
// above the footer, what is live updates the footer.
func (m *model) event(ev event.Event) tea.Cmd {
	lines, cmd := m.apply(ev)
	if len(lines) == 0 {
		return cmd
	}
	return tea.Batch(m.print(lines...), cmd)
}

// apply updates the footer's state with ev and returns the lines to print.
func (m *model) apply(ev event.Event) ([]string, tea.Cmd) {
	switch ev.Type {
	case event.TextDelta:
		var c event.TextContent
		if ev.Decode(&c) == nil {
			m.streamed.WriteString(terminal.Printable(c.Text))
		}
	case event.ThinkingDelta:
		var c event.TextContent
		if ev.Decode(&c) == nil {
			m.thinking += len(c.Text)
		}
	case event.Retry:
		var c event.RetryContent
		_ = ev.Decode(&c)
		m.streamed.Reset()
		return []string{fmt.Sprintf("[retrying the model call, attempt %d: %s]", c.Attempt, terminal.Printable(c.Error))}, nil
	case event.UserMessage:
		var c event.TextContent
		_ = ev.Decode(&c)
		return []string{"", indent("you› ", terminal.Printable(c.Text))}, nil
	case event.AssistantMessage:
		return m.answer(ev), nil
	case event.ExtendedThinking:
		var c event.ThinkingContent
		_ = ev.Decode(&c)
		m.thinking = 0
		return []string{fmt.Sprintf("💭 thought (%s, folded)", chars(len(c.Thinking)))}, nil
	case event.ToolCall:
		var c event.ToolCallContent
		_ = ev.Decode(&c)
		return []string{fmt.Sprintf("🔧 %s %s", c.Name, clip(terminal.Printable(string(c.Args)), 100))}, nil
	case event.SubagentSpawn:
		return []string{terminal.SubagentEventLine(ev)}, m.readSubagents()
	case event.SubagentProgress:
		return []string{terminal.SubagentEventLine(ev)}, nil
	case event.SubagentComplete:
		return m.completed(ev), nil
	case event.SpawnProposed:
		return m.proposed(ev)
	case event.SpawnDecided:
		var c event.SpawnDecidedContent
		_ = ev.Decode(&c)
		m.pending = slices.DeleteFunc(m.pending, func(id string) bool { return id == c.PendingID })
		m.processes = slices.DeleteFunc(m.processes, func(id string) bool { return id == c.PendingID })
	case event.UserQuestion:
		var c event.QuestionContent
		_ = ev.Decode(&c)
		m.questions = append(m.questions, c.QuestionID)
		return []string{terminal.SubagentEventLine(ev), "   answer with /answer your answer (/answer " + c.QuestionID + " … when several are open)"}, nil
	case event.QuestionAnswered:
		var c event.AnsweredContent
		_ = ev.Decode(&c)
		m.questions = slices.DeleteFunc(m.questions, func(id string) bool { return id == c.QuestionID })
		return []string{terminal.SubagentEventLine(ev)}, nil
	case event.SessionState:
		var c event.StateContent
		_ = ev.Decode(&c)
		if c.State != m.state {
			m.state, m.since = c.State, time.Now()
		}
		if c.State == "idle" {
			m.since = time.Time{}
		}
	case event.Error:
		var c event.ErrorContent
		_ = ev.Decode(&c)
		return []string{"⚠️ " + terminal.Printable(c.Error)}, nil
	case event.SessionEnd:
		return m.ended(ev), nil
	}
	return nil, nil
}

// answer prints the orchestrator's answer in full (its Markdown rendered
// when Styled; the streamed preview above the input stays as written)
// and clears the streamed preview.
func (m *model) answer(ev event.Event) []string {
	var c event.TextContent
	_ = ev.Decode(&c)
	m.streamed.Reset()
	m.thinking = 0
	if ev.Agent != event.OrchestratorID || strings.TrimSpace(c.Text) == "" {
		return nil
	}
	if m.opt.Styled {
		return []string{indent("ava› ", terminal.Markdown(c.Text))}
	}
	return []string{indent("ava› ", terminal.Printable(c.Text))}
}

// completed is the unprompted completion notice (seed 000 section 1.3):
// "✅ researcher complete (180s, $0.24): summary".
func (m *model) completed(ev event.Event) []string {
	var c event.SubagentCompleteContent
	if ev.Decode(&c) != nil {
		return nil
	}
	m.subagents = slices.DeleteFunc(m.subagents, func(st ava.Subagent) bool { return st.ID == c.SubagentID })
	line := terminal.SubagentEventLine(ev)
	if c.Status == lifecycle.Success && strings.TrimSpace(c.Summary) != "" {
		line += ": " + clip(strings.Join(strings.Fields(terminal.Printable(c.Summary)), " "), 300)
	}
	if sources := terminal.SourcesText(ev); sources != "" {
		return []string{line, indent("   ", sources)}
	}
	return []string{line}
}

// proposed shows a proposal and its question; with Yes it is confirmed
// at once.
func (m *model) proposed(ev event.Event) ([]string, tea.Cmd) {
	var c event.SpawnProposedContent
	if ev.Decode(&c) != nil {
		return nil, nil
	}
	head := fmt.Sprintf("📝 proposal %s awaits your answer", c.PendingID)
	if c.Kind == ava.KindProcess {
		head = fmt.Sprintf("📝 proposal %s to run a long %s call awaits your answer", c.PendingID, terminal.Printable(c.Role))
	}
	lines := []string{head, terminal.Printable(c.Text)}
	if m.opt.Yes {
		id := c.PendingID
		return append(lines, "(--yes: confirming it)"), func() tea.Msg {
			if err := m.b.Confirm(m.ctx, id); err != nil {
				return noteMsg("⚠️ confirm " + id + ": " + err.Error())
			}
			return nil
		}
	}
	if !slices.Contains(m.pending, c.PendingID) {
		m.pending = append(m.pending, c.PendingID)
		if c.Kind == ava.KindProcess {
			m.processes = append(m.processes, c.PendingID)
		}
	}
	return lines, nil
}

// ended notes a request that did not end well.
func (m *model) ended(ev event.Event) []string {
	if ev.Agent != event.OrchestratorID {
		return nil
	}
	var c event.SessionContent
	_ = ev.Decode(&c)
	m.streamed.Reset()
	m.thinking = 0
	if c.Status == "" || c.Status == lifecycle.Success {
		return nil
	}
	return []string{fmt.Sprintf("(the request ended: %s)", c.Status)}
}

// indent prefixes the first line with p and the others with spaces.
func indent(p, text string) string {
	pad := strings.Repeat(" ", len([]rune(p)))
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = p + lines[i]
		} else {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

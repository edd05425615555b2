package chat

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/internal/lazyre"
)

// help lists the chat's commands.
const help = `Commands:
  /ps               the running subagents of this session
  /stop [ID]        stop a subagent, or (no ID) the current request
  /send ID message  steer a running subagent (it reads it before its next
                    step, nothing is stopped), or a follow-up once it ended
  /logs [ID]        the last steps of a subagent, or of this session
  /yes [P-ID]       confirm the pending proposal
  /answer [Q-ID] …  answer a subagent's question
  /help             this list
  /exit             leave (as Ctrl-D does)
Ctrl-D leaves; Ctrl-C stops the current request (twice, it leaves too).
A proposal can be answered in words too: "yes", "no thanks",
"yes but use haiku", "ok, max $1", "only 2 minutes".`

var (
	subagentIDPattern = lazyre.New(`^S-[0-9a-fA-F]{1,6}$`)
	proposalIDPattern = lazyre.New(`^P-[0-9a-fA-F]{6}$`)
	questionIDPattern = lazyre.New(`^Q-[0-9a-fA-F]{6}$`)
)

// logLines is how many steps /logs shows.
const logLines = 20

// command runs a slash command.
func (m *model) command(text string) tea.Cmd {
	name, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	switch name {
	case "/help", "/?":
		return m.print(help)
	case "/exit", "/quit":
		return tea.Quit
	case "/ps", "/status":
		return m.ps()
	case "/stop":
		return m.stop(rest)
	case "/send":
		id, message, _ := strings.Cut(rest, " ")
		if !subagentIDPattern().MatchString(id) || strings.TrimSpace(message) == "" {
			return m.print("usage: /send S-xxxxxx message")
		}
		return m.sendTo(id, strings.TrimSpace(message))
	case "/logs":
		if rest != "" && !subagentIDPattern().MatchString(rest) {
			return m.print("usage: /logs [S-xxxxxx]")
		}
		return m.logs(rest)
	case "/answer":
		id, answer := "", rest
		if first, more, _ := strings.Cut(rest, " "); questionIDPattern().MatchString(first) {
			id, answer = first, strings.TrimSpace(more)
		}
		if answer == "" {
			return m.print("usage: /answer [Q-xxxxxx] your answer")
		}
		return m.answerQuestion(id, answer)
	case "/yes":
		if rest != "" && !proposalIDPattern().MatchString(rest) {
			return m.print("usage: /yes [P-xxxxxx]")
		}
		if rest == "" && len(m.pending) == 0 {
			return m.print("no proposal awaits your answer")
		}
		return m.send(strings.TrimSpace(rest + " yes"))
	}
	return m.print(fmt.Sprintf("unknown command %s (/help lists them)", name))
}

// ps prints each running subagent's status line.
func (m *model) ps() tea.Cmd {
	return func() tea.Msg {
		list, err := m.b.Subagents(m.ctx)
		if err != nil {
			return noteMsg("⚠️ ps: " + err.Error())
		}
		if len(list) == 0 {
			return noteMsg("no subagent of this session is running")
		}
		lines := make([]string, 0, len(list))
		for _, st := range list {
			lines = append(lines, terminal.StatusLine(st))
		}
		return linesMsg(lines)
	}
}

// stop stops a subagent, or the current request.
func (m *model) stop(id string) tea.Cmd {
	if id != "" && !subagentIDPattern().MatchString(id) {
		return m.print("usage: /stop [S-xxxxxx]")
	}
	return func() tea.Msg {
		key, what := "", "the current request"
		if id != "" {
			key, what = subagentKey(id), id
		}
		stopped, err := m.b.Stop(m.ctx, key)
		switch {
		case err != nil:
			return noteMsg("⚠️ stop " + what + ": " + err.Error())
		case stopped:
			return noteMsg("🛑 stopped " + what)
		}
		return noteMsg(what + " was not running")
	}
}

// sendTo sends a message to a subagent.
func (m *model) sendTo(id, message string) tea.Cmd {
	return func() tea.Msg {
		if err := m.b.SendTo(m.ctx, subagentKey(id), message); err != nil {
			return noteMsg("⚠️ send to " + id + ": " + err.Error())
		}
		return noteMsg("✉️ sent to " + id + " (a running subagent reads it before its next step; its answer is announced here when it ends)")
	}
}

// answerQuestion answers a subagent's question.
func (m *model) answerQuestion(id, answer string) tea.Cmd {
	return func() tea.Msg {
		if err := m.b.Answer(m.ctx, id, answer); err != nil {
			return noteMsg("⚠️ answer: " + err.Error())
		}
		return nil // the QuestionAnswered event shows it
	}
}

// logs prints the last steps of a subagent or of the session.
func (m *model) logs(id string) tea.Cmd {
	return func() tea.Msg {
		lines, err := m.b.Log(m.ctx, id, logLines)
		if err != nil {
			return noteMsg("⚠️ logs: " + err.Error())
		}
		if len(lines) == 0 {
			return noteMsg("nothing logged yet")
		}
		for i, l := range lines {
			lines[i] = terminal.Printable(l)
		}
		return linesMsg(lines)
	}
}

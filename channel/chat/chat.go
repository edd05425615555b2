// Package chat is `ava chat`: a terminal chat with Ava on Bubble Tea.
//
// What the session says scrolls above; below it a live footer shows the
// answer as it streams, the thinking (folded to a count), the running
// subagents, a typing indicator, a pending proposal's question, and the
// input line (line editing, and history on the arrow keys). The session
// lives in this process (Local) or on a daemon (Remote); either way the
// chat reads the session's event stream, so it also shows what other
// channels of the same session did. A continued session (--session) opens
// with its earlier conversation, replayed from the stream's first event.
package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
)

// Options configure a chat.
type Options struct {
	Backend Backend
	In      io.Reader
	Out     io.Writer
	// Banner is printed first (the session, the model); the chat adds
	// its one line on the commands and on leaving (ExitHint).
	Banner string
	// Yes confirms every proposal as it arrives (--yes on a daemon
	// whose policy asks).
	Yes bool
	// Styled renders answers' Markdown with terminal styles
	// (terminal.Markdown); otherwise they are printed as written. The
	// command line sets it from terminal.Styled (not with NO_COLOR).
	Styled bool
	// ExitWindow is how soon a second Ctrl-C exits (default 2s).
	ExitWindow time.Duration
	// Refresh is how often the footer's subagents are read (default 1s).
	Refresh time.Duration
}

// ExitHint is the chat's one statement about leaving, in its banner and
// /help, and in the README and docs/cli.md in the same words: Ctrl-D
// (on an empty line) or /exit leaves; Ctrl-C stops what runs, and a
// second one at once leaves too.
const ExitHint = "/help lists the commands; Ctrl-D leaves (Ctrl-C stops the current request; twice, it leaves too)."

// againHint follows a Ctrl-C: what a second one does.
const againHint = "press Ctrl-C again or Ctrl-D to leave"

// Run runs the chat until the person leaves (a second Ctrl-C within the
// exit window, Ctrl-D on an empty line, /exit) or ctx is done.
func Run(ctx context.Context, opt Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, opt)
	p := tea.NewProgram(m, tea.WithInput(opt.In), tea.WithOutput(opt.Out), tea.WithContext(ctx))
	var wg sync.WaitGroup
	if f, ok := opt.Backend.(interface{ failures() <-chan string }); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case note := <-f.failures():
					p.Send(noteMsg(note))
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := opt.Backend.Follow(ctx, func(ev event.Event) { p.Send(eventMsg(ev)) })
		if err != nil && ctx.Err() == nil {
			p.Send(noteMsg("⚠️ the session's stream ended: " + err.Error()))
		}
	}()
	_, err := p.Run()
	cancel()
	wg.Wait()
	if errors.Is(err, tea.ErrProgramKilled) && errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return err
}

// Messages the program receives besides keys.
type (
	eventMsg     event.Event
	noteMsg      string
	linesMsg     []string
	subagentsMsg []ava.Subagent
	tickMsg      time.Time
	printedMsg   struct{}
)

// model is the chat's screen.
type model struct {
	ctx context.Context
	opt Options
	b   Backend

	input   textinput.Model
	history []string
	histPos int // len(history) when not browsing

	width     int
	laidOut   bool   // the width is known, or the first tick passed without one: printing may start
	state     string // idle, running, waiting_for_subagents
	since     time.Time
	streamed  strings.Builder
	thinking  int
	subagents []ava.Subagent
	outbox    []string // lines to print above the footer, in order
	printing  bool     // a print is on its way (see flush)
	pending   []string // proposal IDs awaiting the person
	processes []string // those of them that are long commands (ava.KindProcess)
	questions []string // subagents' questions awaiting the person
	lastCtrlC time.Time
}

func newModel(ctx context.Context, opt Options) *model {
	if opt.ExitWindow <= 0 {
		opt.ExitWindow = 2 * time.Second
	}
	if opt.Refresh <= 0 {
		opt.Refresh = time.Second
	}
	in := textinput.New()
	in.Prompt = "› "
	in.Placeholder = "message Ava, or /help"
	in.Focus()
	return &model{ctx: ctx, opt: opt, b: opt.Backend, input: in, state: "idle"}
}

// Init prints the banner and starts the footer's clock.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{textinput.Blink, m.tick()}
	cmds = append(cmds, m.print(strings.TrimPrefix(m.opt.Banner+"\n"+ExitHint, "\n")))
	return tea.Batch(cmds...)
}

func (m *model) tick() tea.Cmd {
	return tea.Tick(m.opt.Refresh, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update handles keys, the session's events and the clock.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.laidOut = msg.Width, true
		m.input.Width = max(10, msg.Width-4)
		return m, m.flush()
	case tea.KeyMsg:
		return m.key(msg)
	case eventMsg:
		return m, m.event(event.Event(msg))
	case noteMsg:
		return m, m.print(string(msg))
	case linesMsg:
		return m, m.print(msg...)
	case printedMsg:
		m.printing = false
		return m, m.flush()
	case subagentsMsg:
		m.subagents = msg
		return m, nil
	case tickMsg:
		m.laidOut = true // an output that is not a terminal has no size
		return m, tea.Batch(m.tick(), m.readSubagents(), m.flush())
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// print queues lines to print above the footer. Bubble Tea runs each
// command in its own goroutine, so two prints could overtake each other:
// one print is on its way at a time (flush), and the queue keeps the
// session's order.
func (m *model) print(lines ...string) tea.Cmd {
	m.outbox = append(m.outbox, lines...)
	return m.flush()
}

// flush prints what is queued, unless a print is on its way (the next
// flush follows its printedMsg) or the screen's width is not known yet
// (the banner waits for it, to be wrapped like the rest).
func (m *model) flush() tea.Cmd {
	if m.printing || len(m.outbox) == 0 || !m.laidOut {
		return nil
	}
	text := wrapText(strings.Join(m.outbox, "\n"), m.width)
	m.outbox, m.printing = nil, true
	return tea.Sequence(tea.Println(text), func() tea.Msg { return printedMsg{} })
}

// readSubagents reads the running subagents for the footer.
func (m *model) readSubagents() tea.Cmd {
	return func() tea.Msg {
		list, err := m.b.Subagents(m.ctx)
		if err != nil {
			return nil
		}
		return subagentsMsg(list)
	}
}

// key handles one key press.
func (m *model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.Type {
	case tea.KeyCtrlC:
		return m.interrupt()
	case tea.KeyCtrlD:
		if m.input.Value() == "" {
			return m, tea.Quit
		}
	case tea.KeyEnter:
		text := strings.TrimSpace(m.input.Value())
		m.input.SetValue("")
		if text == "" {
			return m, nil
		}
		if len(m.history) == 0 || m.history[len(m.history)-1] != text {
			m.history = append(m.history, text)
		}
		m.histPos = len(m.history)
		return m, m.submit(text)
	case tea.KeyUp:
		if m.histPos > 0 {
			m.histPos--
			m.input.SetValue(m.history[m.histPos])
			m.input.CursorEnd()
		}
		return m, nil
	case tea.KeyDown:
		if m.histPos < len(m.history) {
			m.histPos++
			value := ""
			if m.histPos < len(m.history) {
				value = m.history[m.histPos]
			}
			m.input.SetValue(value)
			m.input.CursorEnd()
		}
		return m, nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return m, cmd
}

// interrupt is Ctrl-C: the first stops what runs, a second within the
// exit window leaves.
func (m *model) interrupt() (tea.Model, tea.Cmd) {
	now := time.Now()
	if !m.lastCtrlC.IsZero() && now.Sub(m.lastCtrlC) < m.opt.ExitWindow {
		return m, tea.Quit
	}
	m.lastCtrlC = now
	m.input.SetValue("")
	if m.state == "idle" {
		return m, m.print("(nothing to stop; " + againHint + ")")
	}
	return m, func() tea.Msg {
		stopped, err := m.b.Stop(m.ctx, "")
		switch {
		case err != nil:
			return noteMsg("⚠️ stop: " + err.Error())
		case stopped:
			return noteMsg("🛑 stopped (" + againHint + ")")
		}
		return noteMsg("(nothing to stop; " + againHint + ")")
	}
}

// submit sends a message or runs a command.
func (m *model) submit(text string) tea.Cmd {
	if strings.HasPrefix(text, "/") {
		echo := m.print("", "you› "+text) // a command is echoed as a message is
		return tea.Batch(echo, m.command(text))
	}
	return m.send(text)
}

// send delivers a message to the session in the background.
func (m *model) send(text string) tea.Cmd {
	return func() tea.Msg {
		if err := m.b.Send(m.ctx, text); err != nil {
			return noteMsg("⚠️ not sent: " + err.Error())
		}
		return nil
	}
}

// View is the live footer.
func (m *model) View() string {
	var b strings.Builder
	if s := m.streamed.String(); s != "" {
		b.WriteString(tail(wrapText(strings.TrimRight(s, "\n"), m.width), 12))
		b.WriteString("\n")
	}
	if m.thinking > 0 {
		fmt.Fprintf(&b, "💭 thinking… (%s)\n", chars(m.thinking))
	}
	for _, st := range m.subagents {
		b.WriteString(fit(terminal.StatusLine(st), m.width))
		b.WriteString("\n")
	}
	if line := m.typing(); line != "" {
		b.WriteString(line + "\n")
	}
	if len(m.questions) > 0 {
		b.WriteString(wrapText(fmt.Sprintf("❓ %s: a subagent asks you — /answer your answer", strings.Join(m.questions, ", ")), m.width) + "\n")
	}
	if len(m.pending) > 0 {
		change := "yes but use haiku"
		if len(m.processes) == len(m.pending) {
			change = "yes but only 30 seconds"
		}
		b.WriteString(wrapText(fmt.Sprintf("Proceed with %s? y / n / or type a change (%q)", strings.Join(m.pending, ", "), change), m.width) + "\n")
	}
	b.WriteString(fit(m.input.View(), m.width))
	return b.String()
}

// typing is the typing indicator: Ava answers, or its subagents work.
func (m *model) typing() string {
	elapsed := ""
	if !m.since.IsZero() {
		elapsed = fmt.Sprintf(" %ds", int(time.Since(m.since).Seconds()))
	}
	switch {
	case m.state == "running":
		return "⋯ Ava is typing" + elapsed
	case m.state == "waiting_for_subagents" || len(m.subagents) > 0:
		return fmt.Sprintf("⋯ waiting for %d subagent%s", max(1, len(m.subagents)), plural(max(1, len(m.subagents))))
	}
	return ""
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// clip cuts a line to the screen's width.
func clip(s string, width int) string {
	if r := []rune(s); width > 1 && len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}

func chars(n int) string {
	if n >= 1000 {
		return fmt.Sprintf("%.1fk chars", float64(n)/1000)
	}
	return fmt.Sprintf("%d chars", n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

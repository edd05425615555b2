package main_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/creack/pty"
)

// chatScript: the first message makes the orchestrator propose a slow
// researcher; later requests are slow answers to interrupt.
const chatScript = `
conversations:
  - match: "specialized .* subagent"
    turns:
      - text: "the answer is 42"
        delay: 2s
        usage: {input: 100, output: 10}
  - turns:
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: find the answer, rationale: "it needs reading", background: true}}]
      - text: "I proposed a researcher for that."
      - text: "a slow answer"
        delay: 60s
      - text: "a slow answer"
        delay: 60s
      - text: "a slow answer"
        delay: 60s
`

// screen is what a pseudo-terminal shows, without escape sequences.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x1b\][^\x07]*\x07|\r`)

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansi.ReplaceAllString(s.buf.String(), "")
}

// waitFor waits until the screen shows want after position from, and
// returns the position after it.
func (s *screen) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		text := s.text()
		if from > len(text) {
			from = len(text)
		}
		if i := strings.Index(text[from:], want); i >= 0 {
			return from + i + len(want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the screen never showed %q after position %d; it shows:\n%s", want, from, s.text()[from:])
	return 0
}

// TestChatInPseudoTerminal drives `ava chat` in a real pseudo-terminal:
// a message whose spawn is proposed, the answer "y" to the prompt, the
// subagent in the footer while it runs and its completion notice, /ps
// and /help, Ctrl-C stopping a slow request, and two Ctrl-C exiting.
func TestChatInPseudoTerminal(t *testing.T) {
	script := filepath.Join(t.TempDir(), "chat.yaml")
	must(t, os.WriteFile(script, []byte(strings.ReplaceAll(chatScript, "SCRIPT", script)), 0o600))
	root := t.TempDir()
	operatorSubagentScript(t, root, script)
	cmd := exec.Command(avaBin, "chat", "--model", "scripted/"+script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + root,
		"AVA_WORKSPACE=" + t.TempDir(), "AVA_CONFIRM=always", "TERM=xterm-256color", "AVA_PROGRESS_AFTER=1s", "AVA_PROGRESS_EVERY=1m"}
	c := startChat(t, cmd)
	scr, tty, typeLine := c.scr, c.tty, c.typeLine
	at := scr.waitFor(t, 0, "Ava chat · session ava:chat:")
	at = scr.waitFor(t, at, "›")
	typeLine("find the answer")
	at = scr.waitFor(t, at, "you› find the answer")
	at = scr.waitFor(t, at, "awaits your answer")
	scr.waitFor(t, at, "Proceed with P-") // the footer's question
	at = scr.waitFor(t, at, "I proposed a researcher for that.")
	typeLine("y")
	at = scr.waitFor(t, at, "Spawning researcher subagent")
	// The footer lists the running subagent and waits for it.
	footer := scr.waitFor(t, at, "Researcher running")
	scr.waitFor(t, footer, "waiting for 1 subagent")
	// Its completion arrives unprompted, with its summary.
	at = scr.waitFor(t, at, "Complete (")
	at = scr.waitFor(t, at, "the answer is 42")

	typeLine("/ps")
	at = scr.waitFor(t, at, "no subagent of this session is running")
	typeLine("/help")
	at = scr.waitFor(t, at, "/send ID message")

	// Ctrl-C stops a slow request; the next two leave.
	typeLine("take your time")
	at = scr.waitFor(t, at, "Ava is typing")
	_, _ = tty.Write([]byte{3})
	at = scr.waitFor(t, at, "stopped")
	scr.waitFor(t, at, "(the request ended: cancelled)")
	time.Sleep(2500 * time.Millisecond) // past the exit window: this Ctrl-C only warns
	_, _ = tty.Write([]byte{3})
	at = scr.waitFor(t, at, "press Ctrl-C again or Ctrl-D to leave")
	_, _ = tty.Write([]byte{3})
	c.exit(t, at, "continue with ava chat --session ava:chat:")
}

// ptyChat is `ava chat` running in a pseudo-terminal.
type ptyChat struct {
	scr      *screen
	tty      *os.File
	exited   chan error
	copied   chan struct{}
	typeLine func(string)
}

// startChat starts cmd in a 40×160 pseudo-terminal.
func startChat(t *testing.T, cmd *exec.Cmd) *ptyChat {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	c := &ptyChat{scr: &screen{}, tty: tty, exited: make(chan error, 1), copied: make(chan struct{})}
	go func() {
		defer close(c.copied)
		_, _ = io.Copy(c.scr, tty)
	}()
	go func() { c.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
		<-c.copied
	})
	c.typeLine = func(s string) {
		for _, r := range s {
			_, _ = tty.Write([]byte(string(r)))
			time.Sleep(5 * time.Millisecond)
		}
		_, _ = tty.Write([]byte("\r"))
	}
	return c
}

// exit waits for the chat to exit 0 and print its parting line.
func (c *ptyChat) exit(t *testing.T, at int, parting string) {
	t.Helper()
	select {
	case err := <-c.exited:
		if err != nil {
			t.Fatalf("ava chat exited with %v; screen:\n%s", err, c.scr.text())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("ava chat did not exit on a second Ctrl-C; screen:\n%s", c.scr.text()[at:])
	}
	c.scr.waitFor(t, at, parting)
}

// TestChatOnDaemonShowsOtherChannels: with AVA_ADDR set, `ava chat
// --session` talks to the daemon's session and shows what another
// channel (here the HTTP API, as the panel would) says in it.
func TestChatOnDaemonShowsOtherChannels(t *testing.T) {
	env, _ := daemonEnv(t)
	d := startDaemon(t, env)
	st, err := d.c.Chat(bg(t), client.ChatRequest{Message: "hello from the web"})
	if err != nil {
		t.Fatal(err)
	}
	key := st.SessionKey
	drain(t, st)

	cmd := exec.Command(avaBin, "chat", "--session", key)
	cmd.Env = append(env, "AVA_ADDR="+d.addr, "TERM=xterm-256color")
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "Ava chat · daemon http://"+strings.TrimSuffix(d.addr, "/"))
	at = c.scr.waitFor(t, at, "›")
	time.Sleep(300 * time.Millisecond) // let the chat's stream open
	st, err = d.c.Chat(bg(t), client.ChatRequest{SessionKey: key, Message: "SLOW from another channel"})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, st)
	at = c.scr.waitFor(t, at, "you› SLOW from another channel")
	at = c.scr.waitFor(t, at, "ava› ")
	c.typeLine("/logs")
	at = c.scr.waitFor(t, at, "hello from the web")
	_, _ = c.tty.Write([]byte{3})
	at = c.scr.waitFor(t, at, "press Ctrl-C again or Ctrl-D to leave")
	_, _ = c.tty.Write([]byte{3})
	c.exit(t, at, "session "+key+" lives on the daemon")
}

// drain reads a turn's stream to its end.
func drain(t *testing.T, st *client.Stream) {
	t.Helper()
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("the turn's stream ended without done: %v", err)
		}
		if ev.Type == client.EventDone {
			return
		}
	}
}

// TestChatAnswersAQuestion: a background subagent's question shows in
// `ava chat`; /answer sends the answer, which the subagent uses.
func TestChatAnswersAQuestion(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "ask.yaml")
	must(t, os.WriteFile(script, []byte(strings.ReplaceAll(`
conversations:
  - match: "Begin the task: ASK"
    turns:
      - tool_calls: [{name: ask_user, args: {question: "Which branch?"}}]
      - text: "read {{last_result}}"
  - turns:
      - tool_calls: [{name: spawn_subagent, args: {role: asker, task: ASK away, background: true}}]
      - text: "started an asker"
`, "SCRIPT", script)), 0o600))
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "agents", "asker.md"), []byte("---\nname: asker\ndescription: asks\ntools: [read_file, ask_user]\nmodel: scripted/"+script+"\n---\n"), 0o600))
	cmd := exec.Command(avaBin, "chat", "--model", "scripted/"+script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + root,
		"AVA_WORKSPACE=" + t.TempDir(), "AVA_CONFIRM=never", "TERM=xterm-256color"}
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "›")
	c.typeLine("go")
	at = c.scr.waitFor(t, at, "asks (Q-")
	at = c.scr.waitFor(t, at, "Which branch?")
	c.typeLine("/answer the main one")
	at = c.scr.waitFor(t, at, "got your answer to Q-")
	at = c.scr.waitFor(t, at, "Complete (")
	at = c.scr.waitFor(t, at, "The person answered: the main one")
	_, _ = c.tty.Write([]byte{3})
	at = c.scr.waitFor(t, at, "Ctrl-C again")
	_, _ = c.tty.Write([]byte{3})
	c.exit(t, at, "continue with ava chat --session")
}

// TestChatOnDaemonNewSession: with AVA_ADDR and no --session, the first
// message makes a new session on the daemon and its answer streams back.
func TestChatOnDaemonNewSession(t *testing.T) {
	env, _ := daemonEnv(t)
	d := startDaemon(t, env)
	cmd := exec.Command(avaBin, "chat")
	cmd.Env = append(env, "AVA_ADDR="+d.addr, "TERM=xterm-256color")
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "›")
	c.typeLine("hello there")
	at = c.scr.waitFor(t, at, "you› hello there")
	at = c.scr.waitFor(t, at, "ava› hello back")
	_, _ = c.tty.Write([]byte{3})
	at = c.scr.waitFor(t, at, "Ctrl-C again")
	_, _ = c.tty.Write([]byte{3})
	c.exit(t, at, "lives on the daemon: continue with ava chat --session ava:web:")
}

// TestChatOnDaemonClientChosenSession: `ava chat --session K` on a
// daemon, for a K the daemon does not hold yet, creates the session
// with the first message, shows its answer, and the session is K.
func TestChatOnDaemonClientChosenSession(t *testing.T) {
	env, _ := daemonEnv(t)
	d := startDaemon(t, env)
	const key = "ava:web:mine"
	cmd := exec.Command(avaBin, "chat", "--session", key)
	cmd.Env = append(env, "AVA_ADDR="+d.addr, "TERM=xterm-256color")
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "session "+key)
	at = c.scr.waitFor(t, at, "›")
	c.typeLine("hello there")
	at = c.scr.waitFor(t, at, "you› hello there")
	at = c.scr.waitFor(t, at, "ava› hello back")
	got, err := d.c.Session(bg(t), key)
	if err != nil || got.Key != key {
		t.Fatalf("the daemon's session %s: %+v %v", key, got, err)
	}
	_, _ = c.tty.Write([]byte{3})
	at = c.scr.waitFor(t, at, "Ctrl-C again")
	_, _ = c.tty.Write([]byte{3})
	c.exit(t, at, "session "+key+" lives on the daemon")
}

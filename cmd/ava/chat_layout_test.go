package main_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
)

// TestChatLayoutAtEveryWidth runs the real `ava chat --offline` in a
// pseudo-terminal 80, 110 and 200 columns wide and reads the screen
// through a VT emulator (issue 42 item 8): the demo's long answer is on
// the screen whole, wrapped at word boundaries (no word cut across two
// rows), the footer's prompt is the last thing on the screen, below
// every line printed, and the commands typed (/ps, /help) are echoed
// like messages.
func TestChatLayoutAtEveryWidth(t *testing.T) {
	for _, cols := range []int{80, 110, 200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			t.Parallel()
			rows := chatLayout(t, cols, "never", nil)
			flat := strings.Join(strings.Fields(strings.Join(rows, " ")), " ")
			for _, want := range []string{
				"(offline scripted model: no network, not a real model) " + chatExitHint,
				`This answer came from Ava's offline scripted model, not a real model. You said: "please look up the pricing of three podcast transcription services".`,
				"To talk to a real model, set ANTHROPIC_API_KEY, OPENROUTER_API_KEY or OPENAI_API_KEY (or OPENAI_BASE_URL for Ollama, vLLM or llama.cpp) and AVA_MODEL.",
				"you› /ps no subagent of this session is running",
				"you› /help Commands:",
				`A proposal can be answered in words too: "yes", "no thanks", "yes but use haiku", "ok, max $1", "only 2 minutes".`,
			} {
				if !strings.Contains(flat, want) {
					t.Errorf("the screen does not show, words whole and in order:\n  %s\nscreen:\n%s", want, strings.Join(rows, "\n"))
				}
			}
			last := len(rows) - 1
			for last >= 0 && strings.TrimSpace(rows[last]) == "" {
				last--
			}
			if last < 0 || !strings.HasPrefix(rows[last], "› ") || !strings.Contains(flat, "only 2 minutes\". › ") {
				t.Errorf("the footer's prompt is not the last line, right below the text:\n%s", strings.Join(rows, "\n"))
			}
			for i, r := range rows {
				if n := len([]rune(strings.TrimRight(r, " "))); n > cols {
					t.Errorf("row %d is %d wide on a %d-column screen: %q", i, n, cols, r)
				}
			}
		})
	}
}

// chatExitHint is chat.ExitHint: the chat's one statement on leaving.
const chatExitHint = "/help lists the commands; Ctrl-D leaves (Ctrl-C stops the current request; twice, it leaves too)."

// chatLayout drives one chat at cols columns and returns the screen's
// rows once it has settled.
func chatLayout(t *testing.T, cols int, confirm string, more func(typeLine func(string), scr *screen, at int) int) []string {
	t.Helper()
	const height = 120 // room for everything: nothing scrolls off
	cmd := exec.Command(avaBin, "chat", "--offline")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + t.TempDir(),
		"AVA_WORKSPACE=" + t.TempDir(), "AVA_CONFIRM=" + confirm, "TERM=xterm-256color", "NO_COLOR=1"}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: height, Cols: uint16(cols)})
	if err != nil {
		t.Fatal(err)
	}
	vt := vt10x.New(vt10x.WithSize(cols, height))
	scr := &screen{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(io.MultiWriter(vt, scr), tty)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tty.Close()
		<-copied
	})
	typeLine := func(s string) {
		for _, r := range s {
			_, _ = tty.Write([]byte(string(r)))
			time.Sleep(3 * time.Millisecond)
		}
		_, _ = tty.Write([]byte("\r"))
	}
	at := scr.waitFor(t, 0, "›")
	typeLine("please look up the pricing of three podcast transcription services")
	if more != nil {
		at = more(typeLine, scr, at)
	}
	at = scr.waitFor(t, at, "AVA_MODEL.")
	typeLine("/ps")
	at = scr.waitFor(t, at, "no subagent of this session is running")
	typeLine("/help")
	scr.waitFor(t, at, "only 2 minutes")
	time.Sleep(700 * time.Millisecond) // the footer's next paint
	var rows []string
	for r := range strings.Lines(strings.TrimRight(vt.String(), " \n")) {
		rows = append(rows, strings.TrimRight(r, " \n"))
	}
	return rows
}

// TestChatLayoutWithAProposal: the same at 110 columns (where the footer
// once overwrote the answer) with the default confirmation: the proposal
// is printed while the footer asks "Proceed with P-…?", the person
// answers y, and the subagent's line and the report follow; every line
// printed is on the screen whole, the footer below them.
func TestChatLayoutWithAProposal(t *testing.T) {
	rows := chatLayout(t, 110, "always", func(typeLine func(string), scr *screen, at int) int {
		at = scr.waitFor(t, at, "Nothing has run yet")
		typeLine("y")
		return scr.waitFor(t, at, "you confirmed has finished")
	})
	flat := strings.Join(strings.Fields(strings.Join(rows, " ")), " ")
	for _, want := range []string{
		"I'll spawn a researcher subagent for: demo task",
		"Nothing has run yet: answer yes to run it, or no. When it is done I will report its result here.",
		"you› y",
		"This answer came from Ava's offline scripted model, not a real model.",
		"only 2 minutes\". › ",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the screen does not show, words whole and in order:\n  %s\nscreen:\n%s", want, strings.Join(rows, "\n"))
		}
	}
	for i, r := range rows {
		if n := len([]rune(r)); n > 110 {
			t.Errorf("row %d is %d wide: %q", i, n, r)
		}
	}
}

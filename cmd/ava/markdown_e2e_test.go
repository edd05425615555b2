package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// markdownScript answers every request with Markdown.
const markdownScript = `turns:
  - text: "Some **bold** and \u0060code\u0060.\n\n- first\n- second\n\n[docs](https://example.com/d)"
  - text: "Some **bold** and \u0060code\u0060.\n\n- first\n- second\n\n[docs](https://example.com/d)"
`

// markdownEnv is the environment of an ava whose model answers with
// markdownScript, plus extra variables.
func markdownEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "markdown.yaml")
	must(t, os.WriteFile(script, []byte(markdownScript), 0o600))
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + t.TempDir(),
		"AVA_WORKSPACE=" + t.TempDir(), "AVA_MODEL=scripted/" + script, "TERM=xterm-256color"}, extra...)
}

// TestChatAndRunRenderMarkdown: on a terminal, `ava chat` and `ava run`
// show the answer's Markdown styled (bold and code as ANSI styles,
// bullets, a link's address after its text); with NO_COLOR, or when
// `ava run`'s output is not a terminal, the answer is printed as
// written.
func TestChatAndRunRenderMarkdown(t *testing.T) {
	const styledBold = "\x1b[0;1mbold\x1b[0m"
	cmd := exec.Command(avaBin, "chat")
	cmd.Env = markdownEnv(t)
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "›")
	c.typeLine("hello")
	at = c.scr.waitFor(t, at, "ava› Some bold and code.")
	c.scr.waitFor(t, at, "• second")
	c.scr.waitFor(t, at, "docs (https://example.com/d)")
	if raw := c.scr.raw(); !strings.Contains(raw, styledBold) {
		t.Errorf("ava chat: no bold style in %q", raw)
	}

	cmd = exec.Command(avaBin, "chat")
	cmd.Env = markdownEnv(t, "NO_COLOR=1")
	c = startChat(t, cmd)
	at = c.scr.waitFor(t, 0, "›")
	c.typeLine("hello")
	c.scr.waitFor(t, at, "ava› Some **bold** and `code`.")

	cmd = exec.Command(avaBin, "run", "hello")
	cmd.Env = markdownEnv(t)
	c = startChat(t, cmd)
	at = c.scr.waitFor(t, 0, "Some bold and code.")
	c.scr.waitFor(t, at, "• second")
	if code := exitCode(t, c); code != 0 {
		t.Fatalf("ava run: exit %d; screen:\n%s", code, c.scr.text())
	}
	if raw := c.scr.raw(); !strings.Contains(raw, styledBold) || strings.Contains(raw, "**") {
		t.Errorf("ava run on a terminal: %q", raw)
	}

	cmd = exec.Command(avaBin, "run", "hello")
	cmd.Env = markdownEnv(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ava run | cat: %v", err)
	}
	if want := "Some **bold** and `code`.\n\n- first\n- second\n\n[docs](https://example.com/d)\n"; string(out) != want {
		t.Errorf("ava run | cat printed %q, want %q", out, want)
	}
}

// raw is everything the terminal received, escape sequences included.
func (s *screen) raw() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

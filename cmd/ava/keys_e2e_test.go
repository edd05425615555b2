package main_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Session keys by one rule (issue 42 item 4): a bare name is ava:cli:<name>
// on every command, and a malformed ID or key is refused before anything
// is printed or opened, with exit 2 from every command.
func TestSessionNamesAndKeyMistakes(t *testing.T) {
	root := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + root + "/data", "AVA_WORKSPACE=" + root, "AVA_CONFIRM=never"}
	d := startDaemon(t, env)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(avaBin, args...)
		cmd.Env = append(env, "AVA_ADDR="+d.addr)
		return runCmd(t, cmd)
	}
	// A bare name is the command line's session, on the daemon too.
	out, errOut, code := run("send", "notes", "hello")
	if code != 0 || !strings.Contains(out, "[offline demo model]") {
		t.Fatalf("send notes hello: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := d.c.Session(bg(t), "ava:cli:notes"); err != nil {
		t.Fatalf("ava:cli:notes not on the daemon: %v", err)
	}
	out, errOut, code = run("logs", "--session", "notes", "--json")
	if code != 0 || !strings.Contains(out, `"sessionId":"ava:cli:notes"`) {
		t.Fatalf("logs --session notes: exit %d\n%s\n%s", code, out, errOut)
	}
	// ava run: the name continues ava:cli:notes in its own process.
	out, errOut, code = run("run", "--session", "later", "hi")
	if code != 0 || !strings.Contains(errOut, "continue with ava run --session ava:cli:later") {
		t.Fatalf("run --session later: exit %d\n%s\n%s", code, out, errOut)
	}
	// Mistakes: exit 2 from every command, before anything is printed
	// (no offline notice, no continuation hint) or opened (no terminal
	// needed for ava chat to say so).
	for _, args := range [][]string{
		{"run", "--session", "my notes", "hi"}, {"run", "--session", "S-notes", "hi"},
		{"chat", "--session", "my_notes"}, {"chat", "--session", "S-7f3a2b"},
		{"send", "S-zz", "hi"}, {"stop", "my notes"}, {"status", "S-zz"}, {"status", "notes"},
		{"logs", "S-zz"}, {"logs", "--session", "my notes"}, {"logs", "S-ffffff"},
	} {
		out, errOut, code := run(args...)
		if code != 2 || out != "" || strings.Contains(errOut, "[offline]") || strings.Contains(errOut, "continue with") ||
			!strings.Contains(errOut, "Run 'ava "+args[0]+" --help'") {
			t.Errorf("ava %q: exit %d, want 2 and only the mistake\nstdout %s\nstderr %s", args, code, out, errOut)
		}
	}
}

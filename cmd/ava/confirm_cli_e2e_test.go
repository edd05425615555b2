package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// confirmEnv is a data root whose roles run spawnOnceScript, with the
// default policy (confirm always); env is for ava(), list for exec.
func confirmEnv(t *testing.T) (env map[string]string, list []string) {
	t.Helper()
	root := t.TempDir()
	script := filepath.Join(t.TempDir(), "spawn.yaml")
	must(t, os.WriteFile(script, []byte(spawnOnceScript), 0o600))
	operatorSubagentScript(t, root, script)
	env = map[string]string{"AVA_DATA_ROOT": root, "AVA_CONFIRM": "always", "AVA_MODEL": "scripted/" + script}
	list = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_WORKSPACE=" + t.TempDir(), "TERM=xterm-256color"}
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	return env, list
}

// spawnsRecorded counts the subagent runs the data root recorded.
func spawnsRecorded(t *testing.T, env map[string]string) int {
	t.Helper()
	out, _, _ := ava(t, env, "logs", "--type", "SubagentSpawn", "--json")
	if strings.TrimSpace(out) == "" {
		return 0
	}
	return len(strings.Split(strings.TrimSpace(out), "\n"))
}

// exitCode waits for a command in a pseudo-terminal and returns its
// exit code.
func exitCode(t *testing.T, c *ptyChat) int {
	t.Helper()
	select {
	case err := <-c.exited:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("it did not exit; screen:\n%s", c.scr.text())
	}
	return -1
}

// TestSpawnWaitAsksOnTerminal: `ava spawn --wait` on a terminal shows
// the proposal and asks; an unclear answer is asked again, "y" runs the
// subagent and waits for its result (exit 0), "n" starts nothing (exit 1).
func TestSpawnWaitAsksOnTerminal(t *testing.T) {
	env, list := confirmEnv(t)
	cmd := exec.Command(avaBin, "spawn", "--role", "researcher", "--model", "haiku", "--wait", "look around")
	cmd.Env = list
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "Proceed? [Yes/No]")
	at = c.scr.waitFor(t, at, `Proceed? y / n / or a change ("yes but use haiku"): `)
	c.typeLine("hmm, perhaps")
	at = c.scr.waitFor(t, at, "I could not tell whether that is a yes")
	at = c.scr.waitFor(t, at, "or a change")
	c.typeLine("y")
	at = c.scr.waitFor(t, at, "confirmed: started S-")
	c.scr.waitFor(t, at, "status: success")
	if code := exitCode(t, c); code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, c.scr.text())
	}
	if n := spawnsRecorded(t, env); n != 1 {
		t.Fatalf("%d runs recorded, want 1", n)
	}

	cmd = exec.Command(avaBin, "spawn", "--role", "researcher", "--model", "haiku", "--wait", "look around")
	cmd.Env = list
	c = startChat(t, cmd)
	at = c.scr.waitFor(t, 0, "or a change")
	c.typeLine("n")
	c.scr.waitFor(t, at, "you declined the spawn; nothing ran")
	if code := exitCode(t, c); code != 1 {
		t.Fatalf("no: exit %d; screen:\n%s", code, c.scr.text())
	}
	if n := spawnsRecorded(t, env); n != 1 {
		t.Fatalf("after no: %d runs recorded, want 1", n)
	}

	// Ctrl-C at the question leaves at once, the proposal pending.
	cmd = exec.Command(avaBin, "spawn", "--role", "researcher", "--model", "haiku", "--wait", "look around")
	cmd.Env = list
	c = startChat(t, cmd)
	at = c.scr.waitFor(t, 0, "or a change")
	_, _ = c.tty.Write([]byte{3})
	c.scr.waitFor(t, at, "ava confirm P-")
	if code := exitCode(t, c); code != 1 {
		t.Fatalf("Ctrl-C: exit %d; screen:\n%s", code, c.scr.text())
	}
	if n := spawnsRecorded(t, env); n != 1 {
		t.Fatalf("after Ctrl-C: %d runs recorded, want 1", n)
	}
}

// TestRunAsksOnTerminal: `ava run` on a terminal asks about its turn's
// proposal; "y" starts the subagent and waits for it, "n" declines; the
// session key is printed to go on with.
func TestRunAsksOnTerminal(t *testing.T) {
	env, list := confirmEnv(t)
	cmd := exec.Command(avaBin, "run", "go")
	cmd.Env = list
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "Proceed? [Yes/No]")
	at = c.scr.waitFor(t, at, ": Proceed? y / n / or a change")
	c.typeLine("y")
	at = c.scr.waitFor(t, at, "confirmed: started S-")
	at = c.scr.waitFor(t, at, "success")
	at = c.scr.waitFor(t, at, ": found it")
	c.scr.waitFor(t, at, "session ava:cli:")
	if code := exitCode(t, c); code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, c.scr.text())
	}
	if n := spawnsRecorded(t, env); n != 1 {
		t.Fatalf("%d runs recorded, want 1", n)
	}

	cmd = exec.Command(avaBin, "run", "go")
	cmd.Env = list
	c = startChat(t, cmd)
	at = c.scr.waitFor(t, 0, ": Proceed? y / n / or a change")
	c.typeLine("maybe later")
	at = c.scr.waitFor(t, at, "I could not tell whether that is a yes")
	at = c.scr.waitFor(t, at, ": Proceed? y / n / or a change")
	c.typeLine("no")
	at = c.scr.waitFor(t, at, "declined: nothing started")
	c.scr.waitFor(t, at, "continue with ava run --session ava:cli:")
	if code := exitCode(t, c); code != 0 {
		t.Fatalf("no: exit %d; screen:\n%s", code, c.scr.text())
	}
	if n := spawnsRecorded(t, env); n != 1 {
		t.Fatalf("after no: %d runs recorded, want 1", n)
	}
}

var proposalID = regexp.MustCompile(`P-[0-9a-f]{6}`)

// TestConfirmLaterWithoutTerminal: without a terminal `ava spawn --wait`
// and `ava run` start nothing and exit 1 saying how to answer; `ava
// confirm P-… yes` then runs the spawn in its own process and prints its
// result; answering again, an unclear answer or an unknown ID is exit 1,
// a malformed ID exit 2.
func TestConfirmLaterWithoutTerminal(t *testing.T) {
	env, _ := confirmEnv(t)
	out, errOut, code := ava(t, env, "spawn", "--role", "researcher", "--model", "haiku", "--wait", "look around")
	if code != 1 || !strings.Contains(out, "Proceed? [Yes/No]") || !strings.Contains(errOut, "ava confirm P-") ||
		!strings.Contains(errOut, "--yes") {
		t.Fatalf("spawn: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	spawnID := proposalID.FindString(out)
	out, errOut, code = ava(t, env, "run", "--session", "ava:cli:later", "go")
	if code != 1 || !strings.Contains(errOut, "ava confirm P-") || !strings.Contains(errOut, "session ava:cli:later") {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	runID := proposalID.FindString(errOut)
	if n := spawnsRecorded(t, env); n != 0 {
		t.Fatalf("%d runs started without a terminal", n)
	}
	if _, errOut, code := ava(t, env, "confirm", spawnID, "hmm"); code != 1 || !strings.Contains(errOut, "could not tell") {
		t.Fatalf("unclear: exit %d: %s", code, errOut)
	}
	out, errOut, code = ava(t, env, "confirm", spawnID, "yes")
	if code != 0 || !strings.Contains(out, "status: success") || !strings.Contains(errOut, spawnID+" confirmed") {
		t.Fatalf("confirm: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, errOut, code := ava(t, env, "confirm", spawnID, "yes"); code != 1 {
		t.Fatalf("again: exit %d: %s", code, errOut)
	}
	if _, errOut, code := ava(t, env, "confirm", runID, "no"); code != 0 || !strings.Contains(errOut, "declined") {
		t.Fatalf("no: exit %d: %s", code, errOut)
	}
	if n := spawnsRecorded(t, env); n != 1 {
		t.Fatalf("%d runs recorded, want 1", n)
	}
	if _, _, code := ava(t, env, "confirm", "P-000000", "yes"); code != 1 {
		t.Fatalf("unknown: exit %d", code)
	}
	if _, _, code := ava(t, env, "confirm", "S-123", "yes"); code != 2 {
		t.Fatalf("malformed: exit %d", code)
	}
	if _, errOut, code := ava(t, env, "confirm", runID); code != 2 || !strings.Contains(errOut, "no terminal") {
		t.Fatalf("no answer, no terminal: exit %d: %s", code, errOut)
	}
	out, errOut, code = ava(t, env, "run", "--json", "--yes", "go")
	if code != 0 || !strings.Contains(out, `"session": "ava:cli:`) {
		t.Fatalf("run --json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestConfirmOnDaemon: a proposal of the daemon (ava spawn without
// --wait) is answered with ava confirm and AVA_ADDR, and its subagent
// runs there.
func TestConfirmOnDaemon(t *testing.T) {
	env, _ := daemonEnv(t)
	env = append(env, "AVA_CONFIRM=always")
	d := startDaemon(t, env)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(avaBin, args...)
		cmd.Env = append(env, "AVA_ADDR="+d.addr)
		return runCmd(t, cmd)
	}
	out, errOut, code := run("spawn", "--role", "researcher", "look around")
	id := proposalID.FindString(out)
	if code != 0 || id == "" || !strings.Contains(errOut, "ava confirm "+id) || strings.Contains(errOut, "curl") {
		t.Fatalf("spawn: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = run("confirm", id, "yes")
	if code != 0 || !strings.HasPrefix(out, "S-") {
		t.Fatalf("confirm: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	sa := strings.TrimSpace(out)
	if _, errOut, code := run("confirm", id, "yes"); code != 1 {
		t.Fatalf("again: exit %d: %s", code, errOut)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := run("status", sa)
		if strings.Contains(out, "success") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never succeeded:\n%s", sa, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/avaagent/ava/gateway/client"
)

// The offline demo (issue 31 item 2) tells the truth about where it is:
// it proposes a subagent, says nothing has run while the proposal waits
// for the person, and reports the subagent's real result once it ran.

var subagentIDPattern = regexp.MustCompile(`S-[0-9a-f]{6}`)

// TestOfflineDemoOnDaemon: through the daemon's HTTP API with the
// default policy, "hello" gets a proposal and an answer that says so
// (no result claimed); "yes" runs the subagent; once it has ended the
// orchestrator's report of its result arrives on the session's stream by
// itself, with no other message sent (issue 40).
func TestOfflineDemoOnDaemon(t *testing.T) {
	root := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + root + "/data", "AVA_WORKSPACE=" + root}
	d := startDaemon(t, env)
	const key = "ava:web:demo"
	first := chatText(t, d.c, client.ChatRequest{SessionKey: key, Message: "hello"})
	pending, err := d.c.Proposals(bg(t), key)
	if err != nil || len(pending) != 1 {
		t.Fatalf("proposals %+v, %v", pending, err)
	}
	if !strings.Contains(first.Text, "I proposed a researcher subagent ("+pending[0].ID+")") || !strings.Contains(first.Text, "answer yes to run it") ||
		strings.Contains(first.Text, "finished") || strings.Contains(first.Text, "result:") || !first.Offline {
		t.Fatalf("first answer claims what did not happen, or hides the proposal:\n%s", first.Text)
	}
	if sas, _ := d.c.Subagents(bg(t), client.SubagentFilter{Parent: key}); len(sas) != 0 {
		t.Fatalf("%d subagents ran before yes", len(sas))
	}
	// The stream from before "yes" on: the report must arrive on it
	// with no second message of the person's (issue 40).
	st, err := d.c.StreamFromNow(bg(t), key)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	yes := chatText(t, d.c, client.ChatRequest{SessionKey: key, Message: "yes"})
	id := subagentIDPattern.FindString(yes.Text)
	if id == "" {
		t.Fatalf("yes: %q", yes.Text)
	}
	report, users := "", 0
	for report == "" {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream ended before the report: %v", err)
		}
		var c struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(ev.Data, &c)
		switch {
		case ev.Type == "UserMessage":
			users++
		case ev.Type == "AssistantMessage" && strings.Contains(c.Content.Text, "you confirmed has finished"):
			report = c.Content.Text
		}
	}
	if !strings.Contains(report, "The researcher subagent "+id+" you confirmed has finished with status success") ||
		!strings.Contains(report, "The offline demo subagent ran and returned a structured result.") {
		t.Fatalf("report:\n%s", report)
	}
	if users != 1 {
		t.Fatalf("%d person's messages on the stream, want only the yes", users)
	}
	if sa, err := d.c.Subagent(bg(t), id); err != nil || sa.Status != "success" {
		t.Fatalf("%s: %+v %v", id, sa, err)
	}
}

// TestOfflineDemoRunOnTerminal: `ava run --offline hello` on a terminal
// under the default policy says a subagent was proposed and nothing ran,
// asks, and after "y" shows the subagent's real result and the
// orchestrator's report of it, with no other message (issue 40).
func TestOfflineDemoRunOnTerminal(t *testing.T) {
	cmd := exec.Command(avaBin, "run", "--offline", "hello")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + t.TempDir(), "AVA_WORKSPACE=" + t.TempDir(), "TERM=xterm-256color"}
	c := startChat(t, cmd)
	at := c.scr.waitFor(t, 0, "I proposed a researcher subagent (P-")
	at = c.scr.waitFor(t, at, ": Proceed? y / n / or a change")
	if before := c.scr.text(); strings.Contains(before, "finished") || strings.Contains(before, "Its summary") {
		t.Fatalf("a result is claimed before the answer:\n%s", before)
	}
	c.typeLine("y")
	at = c.scr.waitFor(t, at, "confirmed: started S-")
	at = c.scr.waitFor(t, at, ": The offline demo subagent ran and returned a structured result.")
	// The orchestrator's report arrives by itself before the run exits.
	c.scr.waitFor(t, at, "you confirmed has finished with status success")
	if code := exitCode(t, c); code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, c.scr.text())
	}
}

// TestOfflineDemoRunYes: with --yes the subagent runs at once, and the
// one answer reports its real result (its ID and status).
func TestOfflineDemoRunYes(t *testing.T) {
	root := t.TempDir()
	out, errOut, code := ava(t, map[string]string{"AVA_DATA_ROOT": root, "AVA_CONFIRM": "always"}, "run", "--offline", "--yes", "hello")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	id := subagentIDPattern.FindString(out)
	if id == "" || !strings.Contains(out, "The researcher subagent "+id+" ran and ended with status success") ||
		!strings.Contains(out, "Its summary: The offline demo subagent ran and returned a structured result.") || strings.Contains(out, "awaiting") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
	st, _, code := ava(t, map[string]string{"AVA_DATA_ROOT": root}, "logs", "--type", "SubagentComplete")
	if code != 0 || !strings.Contains(st, id+" status=success") {
		t.Fatalf("%s was not recorded as run: exit %d\n%s", id, code, st)
	}
}

package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// processScript has the orchestrator run a command that declares a
// 90-second timeout (above the 60-second default of
// confirm_processes_after), then say what it printed.
const processScript = `conversations:
  - replies:
      - when: {result: {}}
        text: "The command said: {{last_result}}"
      - tool_calls: [{name: run_bash, args: {command: "echo LONG_RUN_DONE > ran.txt; cat ran.txt", timeout_seconds: 90}}]
`

// TestLongRunBashWaitsForYes: through the daemon's API under the asking
// policy, a run_bash that declares a long timeout is a proposal of kind
// process; the turn waits (nothing ran) until the person's yes, then
// the command runs and its output reaches the turn's answer (issue 40
// item 3).
func TestLongRunBashWaitsForYes(t *testing.T) {
	d, work, p, answer := waitingRunBash(t)
	if _, err := d.c.Confirm(bg(t), p.ID, client.ConfirmRequest{Decision: client.DecisionYes}); err != nil {
		t.Fatal(err)
	}
	wantCommandOutput(t, d, answer)
	if _, err := os.Stat(filepath.Join(work, "ran.txt")); err != nil {
		t.Fatal("the command did not run after the yes")
	}
}

// TestChatYesRunsTheWaitingRunBash: while the turn waits, the person's
// "yes" typed into POST /api/chat (as the panel's message box sends it)
// is the answer, not a new message: its reply says the call runs, and
// the waiting turn's answer carries the command's output.
func TestChatYesRunsTheWaitingRunBash(t *testing.T) {
	d, _, p, answer := waitingRunBash(t)
	st, err := d.c.Chat(bg(t), client.ChatRequest{SessionKey: processKey, Message: "yes"})
	if err != nil {
		t.Fatalf("yes while the turn waits: %v", err)
	}
	defer st.Close()
	reply := doneText(st)
	if want := "▶ Running the run_bash call (" + p.ID + ")"; !strings.HasPrefix(reply, want) {
		t.Fatalf("reply to yes: %q, want it to start %q", reply, want)
	}
	wantCommandOutput(t, d, answer)
}

const processKey = "ava:web:process"

// waitingRunBash starts a daemon under the asking policy and a turn
// whose long run_bash waits for the person; it returns the daemon, the
// workspace, the proposal and where the turn's answer will come.
func waitingRunBash(t *testing.T) (*daemon, string, client.Proposal, <-chan string) {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	must(t, os.MkdirAll(work, 0o700))
	script := filepath.Join(root, "process.yaml")
	must(t, os.WriteFile(script, []byte(processScript), 0o600))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + filepath.Join(root, "data"),
		"AVA_WORKSPACE=" + work, "AVA_MODEL=scripted/" + script, "AVA_CONFIRM=always"}
	d := startDaemon(t, env)
	answer := make(chan string, 1)
	st, err := d.c.Chat(bg(t), client.ChatRequest{SessionKey: processKey, Message: "build it"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	go func() { answer <- doneText(st) }()
	var p client.Proposal
	deadline := time.Now().Add(30 * time.Second)
	for p.ID == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no proposal; daemon:\n%s", d.stderr)
		}
		ps, err := d.c.Proposals(bg(t), processKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 1 {
			p = ps[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p.Kind != "process" || p.Role != "run_bash" || !strings.Contains(p.Task, "LONG_RUN_DONE") || !strings.Contains(p.Text, "declares a") {
		t.Fatalf("proposal %+v", p)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(work, "ran.txt")); err == nil {
		t.Fatal("the command ran before the person's yes")
	}
	select {
	case a := <-answer:
		t.Fatalf("the turn answered before the yes: %q", a)
	default:
	}
	return d, work, p, answer
}

// doneText reads a chat stream to its done event and returns the
// turn's text ("error: …" when the stream failed).
func doneText(st *client.Stream) string {
	for {
		ev, err := st.Next()
		if err != nil {
			return "error: " + err.Error()
		}
		if ev.Type == client.EventDone {
			var r client.TurnResult
			_ = json.Unmarshal(ev.Data, &r)
			return r.Text
		}
	}
}

// wantCommandOutput waits for the waiting turn's answer and checks it
// carries the command's output.
func wantCommandOutput(t *testing.T, d *daemon, answer <-chan string) {
	t.Helper()
	select {
	case a := <-answer:
		if !strings.Contains(a, "The command said:") || !strings.Contains(a, "LONG_RUN_DONE") {
			t.Fatalf("answer %q", a)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer after yes; daemon:\n%s", d.stderr)
	}
}

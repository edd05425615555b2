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
	root := t.TempDir()
	work := filepath.Join(root, "work")
	must(t, os.MkdirAll(work, 0o700))
	script := filepath.Join(root, "process.yaml")
	must(t, os.WriteFile(script, []byte(processScript), 0o600))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + filepath.Join(root, "data"),
		"AVA_WORKSPACE=" + work, "AVA_MODEL=scripted/" + script, "AVA_CONFIRM=always"}
	d := startDaemon(t, env)
	const key = "ava:web:process"
	answer := make(chan string, 1)
	st, err := d.c.Chat(bg(t), client.ChatRequest{SessionKey: key, Message: "build it"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	go func() {
		for {
			ev, err := st.Next()
			if err != nil {
				answer <- "error: " + err.Error()
				return
			}
			if ev.Type == client.EventDone {
				var r client.TurnResult
				_ = json.Unmarshal(ev.Data, &r)
				answer <- r.Text
				return
			}
		}
	}()
	var p client.Proposal
	deadline := time.Now().Add(30 * time.Second)
	for p.ID == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no proposal; daemon:\n%s", d.stderr)
		}
		ps, err := d.c.Proposals(bg(t), key)
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
	if _, err := d.c.Confirm(bg(t), p.ID, client.ConfirmRequest{Decision: client.DecisionYes}); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answer:
		if !strings.Contains(a, "The command said:") || !strings.Contains(a, "LONG_RUN_DONE") {
			t.Fatalf("answer %q", a)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer after yes; daemon:\n%s", d.stderr)
	}
}

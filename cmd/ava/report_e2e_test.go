package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

// A process killed between its subagent's end and the report of it
// (issue 40): the result is in the session, announced, and no report was
// made. Two daemons then start on the data root at once: the report is
// made exactly once, by one of them, with no message from the person.
func TestReportOwedByAKilledProcessIsMadeOnceByTwoDaemons(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	const key = "ava:web:killed-before-report"
	plantOwedResult(t, data, key)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + root,
		"AVA_MODEL=scripted/demo", "AVA_RECOVER_EVERY=1s"}
	a, b := make(chan *daemon), make(chan *daemon)
	go func() { a <- startDaemon(t, env) }()
	go func() { b <- startDaemon(t, env) }()
	da, db := <-a, <-b
	deadline := time.Now().Add(30 * time.Second)
	var reports, users int
	var text string
	for time.Now().Before(deadline) {
		reports, users, text = reportTurns(t, data, key)
		if reports > 0 && strings.Contains(text, "has finished") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Both daemons have swept several times by now (every second).
	time.Sleep(3 * time.Second)
	reports, users, text = reportTurns(t, data, key)
	if reports != 1 || users != 0 {
		t.Fatalf("%d report turns and %d person's messages, want one report and none (daemon logs:\n%s\n%s)", reports, users, da.stderr, db.stderr)
	}
	if !strings.Contains(text, "The researcher subagent S-0a0b0c you confirmed has finished with status success") ||
		!strings.Contains(text, "a planted result") {
		t.Fatalf("report: %q", text)
	}
}

// plantOwedResult stores what a process killed right after its
// subagent ended leaves: the finished run, its result announced into
// the session, and no report.
func plantOwedResult(t *testing.T, data, key string) {
	t.Helper()
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(data, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.AppendMessage(ctx, store.Message{SessionKey: key, Role: store.RoleUser, Sender: store.SenderUser, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessage(ctx, store.Message{SessionKey: key, Role: store.RoleAssistant, Sender: store.SenderAva, Text: "started S-0a0b0c"}); err != nil {
		t.Fatal(err)
	}
	run := store.Run{ID: uuid.NewString(), ShortID: "S-0a0b0c", SessionKey: store.SubagentSessionPrefix + "S-0a0b0c", ParentSession: key,
		ParentAgent: "ava", Mode: store.ModeSingle, Role: "researcher", Task: "demo task", Model: "scripted/demo", Status: lifecycle.Running,
		CreatedAt: time.Now().Add(-time.Minute)}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := st.TransitionRun(ctx, run.ID, "", lifecycle.Active, lifecycle.Success, &store.RunFinish{Result: []byte(`{"summary":"a planted result"}`)}); err != nil {
		t.Fatal(err)
	}
	text := "[Task: demo task]\nSubagent S-0a0b0c finished: status=success, 1s, 10 tokens, 0.00¢\nSummary: a planted result\n"
	if ok, err := st.AnnounceResult(ctx, run.ID, "", store.Message{Text: text, CreatedAt: time.Now().Add(-time.Minute)}); err != nil || !ok {
		t.Fatalf("announce: %v %v", ok, err)
	}
}

// reportTurns reads the session's stored events: how many turns were
// reports, how many messages the person sent, and the reports' text.
func reportTurns(t *testing.T, data, key string) (reports, users int, text string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(data, sqlite.FileName), sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.ReadEvents(context.Background(), key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		var c struct {
			Report bool   `json:"report"`
			Text   string `json:"text"`
		}
		_ = json.Unmarshal(ev.Content, &c)
		switch ev.Type {
		case event.SessionStart:
			if c.Report {
				reports++
			}
		case event.UserMessage:
			users++
		case event.AssistantMessage:
			text += c.Text
		}
	}
	return reports, users, text
}

package gateway_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// The timeline's data marks when a subagent waited for the person: GET
// /api/subagents carries its ask_user waits, open (no answeredAt) while
// it waits, then from the question to the answer and by whom; the run's
// stored result keeps them, so that they outlive the process.
func TestSubagentWaitsForThePerson(t *testing.T) {
	e := newEnv(t, envOptions{script: askScript, roles: map[string]string{"asker.md": askerRole}})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	parent := res.Session
	sa, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "asker", Task: "ASK and wait", Model: spawnModel, Parent: parent})
	must(t, err)
	q := waitQuestion(t, e, parent)
	list, err := e.c.Subagents(ctx(t), client.SubagentFilter{Parent: parent})
	must(t, err)
	if len(list) != 1 || len(list[0].Waits) != 1 {
		t.Fatalf("while it waits: %+v", list)
	}
	open := list[0].Waits[0]
	if open.QuestionID != q.ID || open.AskedAt.IsZero() || !open.AnsweredAt.IsZero() || open.By != "" {
		t.Fatalf("the open wait %+v", open)
	}
	time.Sleep(300 * time.Millisecond)
	_, err = e.c.Answer(ctx(t), q.ID, client.AnswerRequest{Answer: "main"})
	must(t, err)
	done := waitEnded(t, e, sa.ID)
	if len(done.Waits) != 1 {
		t.Fatalf("after the answer: %+v", done.Waits)
	}
	w := done.Waits[0]
	if w.QuestionID != q.ID || !w.AskedAt.Equal(open.AskedAt) || w.By != "person" || w.AnsweredAt.Sub(w.AskedAt) < 300*time.Millisecond ||
		w.AskedAt.Before(done.StartedAt) || w.AnsweredAt.After(done.EndedAt) {
		t.Fatalf("the wait %+v, run %v to %v", w, done.StartedAt, done.EndedAt)
	}
	run, err := e.in.Store.GetRun(ctx(t), sa.ID)
	must(t, err)
	var stored struct {
		Waits []struct {
			QuestionID string    `json:"question_id"`
			AnsweredAt time.Time `json:"answered_at"`
		} `json:"waits"`
	}
	must(t, json.Unmarshal(run.Result, &stored))
	if len(stored.Waits) != 1 || stored.Waits[0].QuestionID != q.ID || !stored.Waits[0].AnsweredAt.Equal(w.AnsweredAt) {
		t.Fatalf("stored result %s", run.Result)
	}
}

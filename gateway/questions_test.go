package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// askerRole lists ask_user; its 2 s timeout is shorter than the 3 s the
// person is given to answer, so a run that waits succeeds only if its
// timeout is paused while it waits.
const askerRole = `---
name: asker
description: asks the person
tools: [read_file, ask_user]
model: haiku
timeout: 2s
---
Ask when unsure.
`

const askScript = `conversations:
  - match: "ASK"
    turns:
      - tool_calls: [{name: ask_user, args: {question: "Which branch should I read?"}}]
      - text: "done: {{last_result}}"
  - turns:
      - text: "hello back"
`

// waitQuestion waits for the session's one open question.
func waitQuestion(t *testing.T, e *env, session string) client.Question {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		qs, err := e.c.Questions(ctx(t), session)
		must(t, err)
		if len(qs) == 1 {
			return qs[0]
		}
	}
	t.Fatal("no question was asked")
	return client.Question{}
}

// waitEnded waits for a subagent to end and returns it.
func waitEnded(t *testing.T, e *env, id string) client.Subagent {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sa, err := e.c.Subagent(ctx(t), id)
		must(t, err)
		if sa.Status != "running" && sa.Status != "pending" && sa.Status != "queued" {
			return sa
		}
	}
	t.Fatalf("%s did not end", id)
	return client.Subagent{}
}

// TestAskUserByAPI: a subagent's question reaches its parent session
// (GET /api/questions, a UserQuestion event), it waits as
// waiting_for_user with its timeout paused, and the answer posted is its
// tool's result; unanswered, it goes on after the limit.
func TestAskUserByAPI(t *testing.T) {
	e := newEnv(t, envOptions{script: askScript, roles: map[string]string{"asker.md": askerRole},
		env: map[string]string{"AVA_ASK_TIMEOUT": "3s"}})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	parent := res.Session
	sa, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "asker", Task: "ASK first", Model: spawnModel, Parent: parent})
	must(t, err)
	q := waitQuestion(t, e, parent)
	if q.SubagentID != sa.ID || q.Role != "asker" || q.Question != "Which branch should I read?" || !strings.HasPrefix(q.ID, "Q-") {
		t.Fatalf("question %+v", q)
	}
	live, err := e.c.Subagent(ctx(t), sa.ID)
	must(t, err)
	if !live.WaitingForUser || live.Stalled || live.Status != "running" {
		t.Fatalf("while it waits: %+v", live)
	}
	time.Sleep(2500 * time.Millisecond) // past its 2 s timeout: paused
	code, body := e.do("POST", "/api/questions/"+q.ID+"/answer", `{"answer":"main","sessionKey":"ava:web:other"}`, nil)
	wantError(t, code, body, 404, "no such open question")
	got, err := e.c.Answer(ctx(t), q.ID, client.AnswerRequest{Answer: "main"})
	must(t, err)
	if got.ID != q.ID {
		t.Fatalf("answered %+v", got)
	}
	done := waitEnded(t, e, sa.ID)
	if done.Status != "success" || !strings.Contains(string(done.Result), "The person answered: main") {
		t.Fatalf("after the answer: %s %s %s", done.Status, done.Error, done.Result)
	}
	_, err = e.c.Answer(ctx(t), q.ID, client.AnswerRequest{Answer: "again"})
	if !client.IsStatus(err, 404) {
		t.Fatalf("a second answer: %v, want 404", err)
	}

	// Unanswered: after AVA_ASK_TIMEOUT the tool says so and the run goes on.
	sa2, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "asker", Task: "ASK second", Model: spawnModel, Parent: parent})
	must(t, err)
	waitQuestion(t, e, parent)
	done = waitEnded(t, e, sa2.ID)
	if done.Status != "success" || !strings.Contains(string(done.Result), "No answer from the person within 3s") {
		t.Fatalf("unanswered: %s %s %s", done.Status, done.Error, done.Result)
	}
	st, err := e.c.Stream(ctx(t), parent, 0)
	must(t, err)
	defer st.Close()
	var types []string
	for _, ev := range until(t, st, func(ev client.Event) bool {
		return ev.Type == "QuestionAnswered" && strings.Contains(string(ev.Data), `"by":"timeout"`)
	}) {
		if ev.Type == "UserQuestion" || ev.Type == "QuestionAnswered" {
			types = append(types, ev.Type)
		}
	}
	if strings.Join(types, ",") != "UserQuestion,QuestionAnswered,UserQuestion,QuestionAnswered" {
		t.Fatalf("parent stream: %v", types)
	}
}

// TestOrchestratorAnswersWhenAsked: with AVA_ASK_ANSWERS=orchestrator a
// background subagent's question becomes a turn of its parent session,
// and the orchestrator's reply is its answer.
func TestOrchestratorAnswersWhenAsked(t *testing.T) {
	e := newEnv(t, envOptions{script: askScript, roles: map[string]string{"asker.md": askerRole},
		env: map[string]string{"AVA_ASK_ANSWERS": "orchestrator"}})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	sa, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "asker", Task: "ASK the orchestrator", Model: spawnModel, Parent: res.Session})
	must(t, err)
	done := waitEnded(t, e, sa.ID)
	// The parent's scripted reply to the question turn is the answer.
	if done.Status != "success" || !strings.Contains(string(done.Result), "The orchestrator answered for the person:") {
		t.Fatalf("%s %s %s", done.Status, done.Error, done.Result)
	}
}

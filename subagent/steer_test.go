package subagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/subagent"
)

// requestHas reports whether a request's last user message holds text.
func requestHas(req *llm.Request, text string) bool {
	last := req.Messages[len(req.Messages)-1]
	return last.Role == llm.RoleUser && strings.Contains(last.TextContent(), text)
}

// TestSteerReachesTheNextModelCall: two messages steered into a running
// subagent are in its next model request, in order, and in its stream as
// the person's messages; nothing is cancelled and the run succeeds.
func TestSteerReachesTheNextModelCall(t *testing.T) {
	h := newHarness(t, `
turns:
  - tool_calls: [{name: read_file, args: {path: a}}]
    delay: 500ms
  - text: "done, with your hint"
`, nil)
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "look"})
	h.model.waitCall(t)
	for _, msg := range []string{"also check b", "and c"} {
		if _, err := h.m.Steer(context.Background(), hd.ID(), msg); err != nil {
			t.Fatal(err)
		}
	}
	r := wait(t, hd)
	if r.Status != lifecycle.Success {
		t.Fatalf("status %s (%s), want success: steering cancels nothing", r.Status, r.Error)
	}
	reqs := h.model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1].TextContent()
	if i, j := strings.Index(last, "also check b"), strings.Index(last, "and c"); i < 0 || j < i {
		t.Fatalf("second request's last message %q: want both steers, in order", last)
	}
	var users []string
	evs, err := h.store.ReadEvents(context.Background(), hd.SessionKey(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == event.UserMessage {
			var c event.TextContent
			_ = ev.Decode(&c)
			users = append(users, c.Text)
		}
	}
	if len(users) != 3 || users[1] != "also check b" || users[2] != "and c" {
		t.Fatalf("user messages in the stream %q", users)
	}
}

// TestSteerAtTheEndBecomesAFollowUp: a message steered while the run
// gives its final answer (no model call left to read it) runs as a
// follow-up turn: never lost.
func TestSteerAtTheEndBecomesAFollowUp(t *testing.T) {
	h := newHarness(t, `
turns:
  - text: "first answer"
    delay: 500ms
  - text: "answer to the late steer"
`, nil)
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "look"})
	h.model.waitCall(t)
	if _, err := h.m.Steer(context.Background(), hd.ID(), "one more thing"); err != nil {
		t.Fatal(err)
	}
	r := wait(t, hd)
	if r.Status != lifecycle.Success || r.Summary != "answer to the late steer" {
		t.Fatalf("result %+v: want the follow-up's answer", r)
	}
	reqs := h.model.requests()
	if len(reqs) != 2 || !requestHas(reqs[1], "one more thing") {
		t.Fatalf("%d calls; the late steer was not the follow-up's input", len(reqs))
	}
}

// TestWrapUpNoteBeforeTheCap: at 80% of the iterations the model is told
// to finish, in the request before the cap.
func TestWrapUpNoteBeforeTheCap(t *testing.T) {
	h := newHarness(t, `
turns:
  - tool_calls: [{name: read_file, args: {path: a}}]
  - tool_calls: [{name: read_file, args: {path: b}}]
  - tool_calls: [{name: read_file, args: {path: c}}]
  - tool_calls: [{name: read_file, args: {path: d}}]
  - text: "wrapped up"
`, func(o *subagent.Options) { o.WrapUpAt = 0.8 })
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "look", MaxIterations: 5})
	r := wait(t, hd)
	if r.Status != lifecycle.Success {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	reqs := h.model.requests()
	for i, req := range reqs {
		told := requestHas(req, "Finish now with what you have")
		if want := i == 3; told != want { // call 4 of 5 is 80%
			t.Errorf("call %d: told to wrap up %v, want %v", i+1, told, want)
		}
	}
}

// TestLimitKeepsPartialWork: a run the iteration cap ends keeps its last
// text and what its tools returned; so do a cost-capped and a timed-out
// one.
func TestLimitKeepsPartialWork(t *testing.T) {
	h := newHarness(t, `
conversations:
  - match: "COSTLY"
    turns:
      - text: "costly a"
        tool_calls: [{name: read_file, args: {path: a}}]
        usage: {input: 1200, output: 10}
      - text: "costly b"
        tool_calls: [{name: read_file, args: {path: b}}]
        usage: {input: 100, output: 10}
      - text: "never"
  - match: "SLOW"
    turns:
      - text: "looking at a"
        tool_calls: [{name: read_file, args: {path: a}}]
      - text: "never"
        delay: 1h
  - turns:
      - text: "looking at a"
        tool_calls: [{name: read_file, args: {path: a}}]
      - text: "now b"
        tool_calls: [{name: read_file, args: {path: b}}]
      - text: "never"
`, nil)
	r := wait(t, h.spawn(t, subagent.Config{Role: "researcher", Task: "look", MaxIterations: 2}))
	if r.Status != lifecycle.IterationsExceeded || r.Partial == nil {
		t.Fatalf("result %+v: want iterations_exceeded with partial", r)
	}
	// The cap ends it before the second call's tool runs.
	if r.Partial.Text != "now b" || len(r.Partial.ToolResults) != 1 || r.Partial.ToolResults[0].Tool != "read_file" ||
		r.Partial.ToolResults[0].Excerpt != "ran read_file" {
		t.Fatalf("partial %+v", r.Partial)
	}
	r = wait(t, h.spawn(t, subagent.Config{Role: "researcher", Task: "COSTLY look", MaxCostCents: 20}))
	if r.Status != lifecycle.CostExceeded || r.Partial == nil || r.Partial.Text != "costly a" || len(r.Partial.ToolResults) != 1 {
		t.Fatalf("cost-capped: %+v (partial %+v)", r, r.Partial)
	}
	r = wait(t, h.spawn(t, subagent.Config{Role: "researcher", Task: "SLOW look", Timeout: 2}))
	if r.Status != lifecycle.Timeout || r.Partial == nil || r.Partial.Text != "looking at a" || len(r.Partial.ToolResults) != 1 {
		t.Fatalf("timed out: %+v (partial %+v)", r, r.Partial)
	}
}

// TestEmptyAnswerIsNotSuccess: an empty final answer, or one missing a
// field the role requires, ends the run error with empty_result.
func TestEmptyAnswerIsNotSuccess(t *testing.T) {
	h := newHarness(t, `
conversations:
  - match: "EMPTY"
    turns:
      - text: "   "
  - match: "FIELDS"
    turns:
      - text: '{"summary": "s", "findings": null}'
  - turns:
      - text: '{"summary": "s", "findings": ["x"]}'
`, func(o *subagent.Options) {
		o.Roles = map[string]role.Role{"auditor": {Name: "auditor", Tools: []string{"read_file"}, Model: "haiku",
			Limits: role.DefaultLimits, RequiredOutput: []string{"findings"}}}
	})
	for task, want := range map[string]lifecycle.Status{"EMPTY": lifecycle.Error, "FIELDS": lifecycle.Error, "fine": lifecycle.Success} {
		r := wait(t, h.spawn(t, subagent.Config{Role: "auditor", Task: task}))
		if r.Status != want {
			t.Errorf("%s: status %s (%s), want %s", task, r.Status, r.Error, want)
		}
		if want == lifecycle.Error && !strings.Contains(r.Error, agent.ErrEmptyResult.Error()) {
			t.Errorf("%s: error %q, want empty_result", task, r.Error)
		}
	}
}

// TestCancelledQuestionIsClosed: a question whose run is cancelled while
// it waits is closed in the parent's stream (by "cancelled"), so that no
// channel shows it open for ever.
func TestCancelledQuestionIsClosed(t *testing.T) {
	h := newHarness(t, `
turns:
  - tool_calls: [{name: ask_user, args: {question: "Which?"}}]
  - text: "never"
`, func(o *subagent.Options) {
		o.Roles = map[string]role.Role{"asker": {Name: "asker", Tools: []string{"read_file", subagent.AskUserTool},
			Model: "haiku", Limits: role.DefaultLimits}}
	})
	hd := h.spawn(t, subagent.Config{Role: "asker", Task: "ask"})
	for deadline := time.Now().Add(10 * time.Second); len(h.m.Questions(parent.SessionKey)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no question asked")
		}
	}
	hd.Cancel()
	if r := wait(t, hd); r.Status != lifecycle.Cancelled {
		t.Fatalf("status %s", r.Status)
	}
	evs, err := h.store.ReadEvents(context.Background(), parent.SessionKey, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	for _, ev := range evs {
		var c event.AnsweredContent
		closed = closed || ev.Type == event.QuestionAnswered && ev.Decode(&c) == nil && c.By == "cancelled"
	}
	if !closed || len(h.m.Questions(parent.SessionKey)) != 0 {
		t.Fatalf("question not closed: events %d, open %v", len(evs), h.m.Questions(parent.SessionKey))
	}
}

// TestConcurrentFollowUpsToAFinishedRun: two queued follow-ups sent at
// once to a finished subagent both run: the second joins the run the
// first starts instead of being refused as busy.
func TestConcurrentFollowUpsToAFinishedRun(t *testing.T) {
	h := newHarness(t, `
turns:
  - text: "first"
  - text: "second"
  - text: "third"
`, nil)
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "look"})
	wait(t, hd)
	errs := make(chan error, 2)
	for _, msg := range []string{"one", "two"} {
		go func() {
			_, err := h.m.Send(context.Background(), hd.ID(), msg, true)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a follow-up was refused: %v", err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); len(h.model.requests()) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d model calls, want 3", len(h.model.requests()))
		}
	}
	wait(t, hd)
}

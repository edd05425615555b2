package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/tool"
)

// AskUserTool is the name of the tool a subagent asks the person with.
// A role has it when it lists it.
const AskUserTool = "ask_user"

// DefaultAskTimeout is how long ask_user waits for an answer by default.
const DefaultAskTimeout = 10 * time.Minute

// Questions lists the open questions of a parent session ("" for all),
// oldest first.
func (m *Manager) Questions(session string) []question.Question { return m.asked.List(session) }

// AnswerQuestion answers an open question of session ("" for any
// session) on behalf of by (question.ByPerson or ByOrchestrator) and
// returns it. question.ErrNoQuestion when there is no such open
// question. In a cluster, a question this process does not hold is
// answered on the process whose run asked it (given its session).
func (m *Manager) AnswerQuestion(id, session, answer, by string) (question.Question, error) {
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return question.Question{}, fmt.Errorf("answer %s: %w", id, question.ErrEmptyAnswer)
	}
	id = question.CanonicalID(id)
	q, err := m.asked.Answer(id, session, answer, by)
	if errors.Is(err, question.ErrNoQuestion) && m.opt.Dispatch != nil && session != "" {
		return m.answerRemote(id, session, answer, by)
	}
	return q, err
}

// askTimeout is how long ask_user waits.
func (m *Manager) askTimeout() time.Duration {
	if m.opt.AskTimeout > 0 {
		return m.opt.AskTimeout
	}
	return DefaultAskTimeout
}

// askUser is the ask_user tool of a manager's subagents.
type askUser struct{ m *Manager }

// AskArgs are ask_user's arguments.
type AskArgs struct {
	Question string `json:"question" jsonschema:"the question for the person, short and self-contained: what you need to know and why"`
}

func (askUser) Name() string { return AskUserTool }

func (askUser) Description() string {
	return "Ask the person a question and wait for the answer (it may take minutes; your time limit is paused meanwhile). " +
		"Use it only when you cannot go on well without their decision or knowledge; if no answer comes in time, " +
		"you are told so and should go on with your best judgement."
}

func (askUser) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"the question for the person, short and self-contained: what you need to know and why"}},"required":["question"],"additionalProperties":false}`)
}

// Run puts the question to the person through the parent session and
// waits for the answer, the limit, or the run's end.
func (t askUser) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var args AskArgs
	if err := json.Unmarshal(raw, &args); err != nil || strings.TrimSpace(args.Question) == "" {
		return tool.Errorf("ask_user needs {\"question\": \"…\"}"), nil
	}
	caller, _ := tool.CallerFrom(ctx)
	h, err := t.m.Get(caller.AgentID)
	if err != nil || !caller.Subagent {
		return tool.Errorf("ask_user is for subagents"), nil
	}
	if h.req.Parent.SessionKey == "" {
		return tool.Errorf("there is no person to ask: this subagent has no parent session"), nil
	}
	return h.ask(ctx, strings.TrimSpace(args.Question))
}

// ask asks the question and waits (timeout paused, status
// waiting_for_user).
func (h *Handle) ask(ctx context.Context, text string) (tool.Result, error) {
	m := h.m
	id, err := drawID(m.opt.Rand, "Q-", "a question ID")
	if err != nil {
		return tool.Result{}, err
	}
	now := m.now()
	q := m.asked.Ask(question.Question{ID: id, Session: h.req.Parent.SessionKey, SubagentID: h.id, Role: h.role.Name,
		Text: text, AskedAt: now, ExpiresAt: now.Add(m.askTimeout())})

	resume := agent.PauseTimeout(ctx)
	defer resume()
	h.setWaiting(true)
	defer h.setWaiting(false)
	h.waitStarted(id, now)
	h.publishParentLeased(event.New(event.UserQuestion, event.QuestionContent{QuestionID: id, SubagentID: h.id, Role: h.role.Name,
		Question: text, ExpiresAt: q.ExpiresAt}))
	h.noticeAsked(q.Question)

	a := q.Wait(ctx, m.askTimeout())
	h.waitEnded(id, m.now(), a.By)
	h.publishParentLeased(event.New(event.QuestionAnswered, event.AnsweredContent{QuestionID: id, SubagentID: h.id, Role: h.role.Name,
		Answer: a.Text, By: a.By}))
	h.noticeAnswered(q.Question, a)
	switch a.By {
	case question.ByCancelled:
		return tool.Result{}, context.Cause(ctx)
	case question.ByTimeout:
		return tool.Result{Output: fmt.Sprintf("No answer from the person within %s. Go on with your best judgement, and say in your answer what you assumed.", m.askTimeout())}, nil
	case question.ByOrchestrator:
		return tool.Result{Output: "The orchestrator answered for the person: " + a.Text}, nil
	}
	return tool.Result{Output: "The person answered: " + a.Text}, nil
}

// waitStarted records that the run waits for the person's answer to
// question id since at.
func (h *Handle) waitStarted(id string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waits = append(h.waits, Wait{QuestionID: id, AskedAt: at})
}

// waitEnded records the end of the wait for question id: answered (or
// closed) at, by whom.
func (h *Handle) waitEnded(id string, at time.Time, by string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.waits {
		if h.waits[i].QuestionID == id {
			h.waits[i].AnsweredAt, h.waits[i].By = at, by
		}
	}
}

// waitsSoFar are the run's waits for the person, a copy.
func (h *Handle) waitsSoFar() []Wait {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.waits)
}

// setWaiting marks the run waiting for the person (or not): it is then
// not flagged stalled.
func (h *Handle) setWaiting(on bool) {
	h.mu.Lock()
	h.waiting = on
	if on {
		h.stalled = false
	}
	h.mu.Unlock()
}

package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/tool"
)

// AskUserTool is the name of the tool a subagent asks the person with.
// A role has it when it lists it.
const AskUserTool = "ask_user"

// DefaultAskTimeout is how long ask_user waits for an answer by default.
const DefaultAskTimeout = 10 * time.Minute

// ErrNoQuestion means a question ID names no open question: it was never
// asked, is another session's, or was answered or gave up already.
var ErrNoQuestion = errors.New("no such open question")

// ErrEmptyAnswer means an answer to a question is empty or blank.
var ErrEmptyAnswer = errors.New("the answer is empty")

// Question is a subagent's open question to the person (ask_user). It
// reaches every channel where the parent session is open, as a
// UserQuestion event, and is answered with Manager.AnswerQuestion.
type Question struct {
	ID         string    `json:"id"`
	Session    string    `json:"sessionKey"`
	SubagentID string    `json:"subagentId"`
	Role       string    `json:"role"`
	Text       string    `json:"question"`
	AskedAt    time.Time `json:"askedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// questions are the open questions of a manager's runs. Observers
// (Options.Observers) hear of each question once it reached the parent
// session (QuestionAsked), and of how it was closed (QuestionAnswered).
type questions struct {
	mu   sync.Mutex
	open map[string]*openQuestion
}

type openQuestion struct {
	Question
	answer chan answered // gets the one answer
}

// answered is an answer and who gave it.
type answered struct{ text, by string }

// Who answers a question (AnswerQuestion's by).
const (
	ByPerson       = "person"
	ByOrchestrator = "orchestrator"
)

// Questions lists the open questions of a parent session ("" for all),
// oldest first.
func (m *Manager) Questions(session string) []Question {
	m.asked.mu.Lock()
	defer m.asked.mu.Unlock()
	var out []Question
	for _, q := range m.asked.open {
		if session == "" || q.Session == session {
			out = append(out, q.Question)
		}
	}
	slices.SortFunc(out, func(a, b Question) int { return a.AskedAt.Compare(b.AskedAt) })
	return out
}

// AnswerQuestion answers an open question of session ("" for any
// session) on behalf of by (ByPerson or ByOrchestrator) and returns it.
// ErrNoQuestion when there is no such open question. In a cluster, a
// question this process does not hold is answered on the process whose
// run asked it (given its session).
func (m *Manager) AnswerQuestion(id, session, answer, by string) (Question, error) {
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return Question{}, fmt.Errorf("answer %s: %w", id, ErrEmptyAnswer)
	}
	if len(id) > 2 && strings.EqualFold(id[:2], "Q-") {
		id = "Q-" + strings.ToLower(id[2:])
	}
	q, err := m.answerLocal(id, session, answer, by)
	if errors.Is(err, ErrNoQuestion) && m.opt.Dispatch != nil && session != "" {
		return m.answerRemote(id, session, answer, by)
	}
	return q, err
}

// answerLocal answers an open question of this process's runs.
func (m *Manager) answerLocal(id, session, answer, by string) (Question, error) {
	m.asked.mu.Lock()
	q, ok := m.asked.open[id]
	if ok && (session == "" || q.Session == session) {
		delete(m.asked.open, q.ID)
	}
	m.asked.mu.Unlock()
	if !ok || (session != "" && q.Session != session) {
		return Question{}, fmt.Errorf("answer %s: %w", id, ErrNoQuestion)
	}
	q.answer <- answered{answer, by}
	return q.Question, nil
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
	q := &openQuestion{Question: Question{ID: id, Session: h.req.Parent.SessionKey, SubagentID: h.id, Role: h.role.Name,
		Text: text, AskedAt: now, ExpiresAt: now.Add(m.askTimeout())}, answer: make(chan answered, 1)}
	m.asked.mu.Lock()
	if m.asked.open == nil {
		m.asked.open = map[string]*openQuestion{}
	}
	m.asked.open[id] = q
	m.asked.mu.Unlock()
	defer func() {
		m.asked.mu.Lock()
		delete(m.asked.open, id)
		m.asked.mu.Unlock()
	}()

	resume := agent.PauseTimeout(ctx)
	defer resume()
	h.setWaiting(true)
	defer h.setWaiting(false)
	h.publishParent(event.New(event.UserQuestion, event.QuestionContent{QuestionID: id, SubagentID: h.id, Role: h.role.Name,
		Question: text, ExpiresAt: q.ExpiresAt}))
	h.noticeAsked(q.Question)

	timer := time.NewTimer(m.askTimeout())
	defer timer.Stop()
	var a answered
	select {
	case a = <-q.answer:
	case <-timer.C:
		a = m.closeQuestion(q, "timeout")
	case <-ctx.Done():
		a = m.closeQuestion(q, "cancelled")
	}
	h.publishParent(event.New(event.QuestionAnswered, event.AnsweredContent{QuestionID: id, SubagentID: h.id, Role: h.role.Name,
		Answer: a.text, By: a.by}))
	h.noticeAnswered(q.Question, a)
	switch a.by {
	case "cancelled":
		return tool.Result{}, context.Cause(ctx)
	case "timeout":
		return tool.Result{Output: fmt.Sprintf("No answer from the person within %s. Go on with your best judgement, and say in your answer what you assumed.", m.askTimeout())}, nil
	case ByOrchestrator:
		return tool.Result{Output: "The orchestrator answered for the person: " + a.text}, nil
	}
	return tool.Result{Output: "The person answered: " + a.text}, nil
}

// closeQuestion closes q unanswered (by "timeout" or "cancelled"),
// unless an answer was taken in the meantime: that one is returned.
func (m *Manager) closeQuestion(q *openQuestion, by string) answered {
	m.asked.mu.Lock()
	delete(m.asked.open, q.ID)
	m.asked.mu.Unlock()
	select {
	case a := <-q.answer: // taken before it was closed
		return a
	default:
		return answered{by: by}
	}
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

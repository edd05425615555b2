// Package question is the registry of subagents' open questions to the
// person (the ask_user tool): a question is asked, listed, answered once
// (by the person or by the orchestrator on their behalf), or closed
// unanswered when it times out or its run ends.
//
// The Registry has a lock of its own, held only to add, find or remove
// a question: an answer is handed over on the question's own channel,
// so answering never waits for the run that asked, and a run waiting
// for its answer holds no lock.
package question

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrNoQuestion means a question ID names no open question: it was never
// asked, is another session's, or was answered or gave up already.
var ErrNoQuestion = errors.New("no such open question")

// ErrEmptyAnswer means an answer to a question is empty or blank.
var ErrEmptyAnswer = errors.New("the answer is empty")

// Question is a subagent's open question to the person (ask_user). It
// reaches every channel where the parent session is open, as a
// UserQuestion event.
type Question struct {
	ID         string    `json:"id"`
	Session    string    `json:"sessionKey"`
	SubagentID string    `json:"subagentId"`
	Role       string    `json:"role"`
	Text       string    `json:"question"`
	AskedAt    time.Time `json:"askedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// Who closed a question (Answer.By): the person or the orchestrator
// answered it, or it closed unanswered.
const (
	ByPerson       = "person"
	ByOrchestrator = "orchestrator"
	ByTimeout      = "timeout"
	ByCancelled    = "cancelled"
)

// Answer is how a question was closed: the answer's text and who gave
// it (ByPerson, ByOrchestrator), or ByTimeout or ByCancelled with no
// text.
type Answer struct {
	Text string
	By   string
}

// CanonicalID is a question ID as the registry holds it: "Q-" and
// lowercase hex, whatever the case it was typed in.
func CanonicalID(id string) string {
	if len(id) > 2 && strings.EqualFold(id[:2], "Q-") {
		return "Q-" + strings.ToLower(id[2:])
	}
	return id
}

// Registry holds the open questions of a process's runs. The zero value
// is ready to use.
type Registry struct {
	mu   sync.Mutex
	open map[string]*Open
}

// Open is a question that was asked and waits for its answer.
type Open struct {
	Question
	reg    *Registry
	answer chan Answer // gets the one answer
}

// Ask registers q as open (its ID drawn by the caller, unique) until
// Wait returns.
func (r *Registry) Ask(q Question) *Open {
	o := &Open{Question: q, reg: r, answer: make(chan Answer, 1)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = map[string]*Open{}
	}
	r.open[q.ID] = o
	return o
}

// Wait returns the question's answer, or closes it unanswered after
// timeout (ByTimeout) or when ctx ends (ByCancelled), unless an answer
// was taken in the meantime: that one is returned. The question is no
// longer open when Wait returns.
func (o *Open) Wait(ctx context.Context, timeout time.Duration) Answer {
	defer o.reg.remove(o.ID)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-o.answer:
		return a
	case <-timer.C:
		return o.close(ByTimeout)
	case <-ctx.Done():
		return o.close(ByCancelled)
	}
}

// close closes the question unanswered (by), unless an answer was taken
// before it was removed.
func (o *Open) close(by string) Answer {
	o.reg.remove(o.ID)
	select {
	case a := <-o.answer: // taken before it was closed
		return a
	default:
		return Answer{By: by}
	}
}

// remove drops the question id from the open ones.
func (r *Registry) remove(id string) {
	r.mu.Lock()
	delete(r.open, id)
	r.mu.Unlock()
}

// List lists the open questions of a parent session ("" for all),
// oldest first.
func (r *Registry) List(session string) []Question {
	r.mu.Lock()
	var out []Question
	for _, q := range r.open {
		if session == "" || q.Session == session {
			out = append(out, q.Question)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Question) int { return a.AskedAt.Compare(b.AskedAt) })
	return out
}

// Answer answers the open question id (CanonicalID) of session ("" for
// any session) with text on behalf of by, and returns it; ErrNoQuestion
// when no such question is open here.
func (r *Registry) Answer(id, session, text, by string) (Question, error) {
	r.mu.Lock()
	o, ok := r.open[id]
	ok = ok && (session == "" || o.Session == session)
	if ok {
		delete(r.open, id)
	}
	r.mu.Unlock()
	if !ok {
		return Question{}, fmt.Errorf("answer %s: %w", id, ErrNoQuestion)
	}
	o.answer <- Answer{Text: text, By: by}
	return o.Question, nil
}

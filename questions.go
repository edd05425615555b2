package ava

import (
	"fmt"
	"strings"

	"github.com/avaagent/ava/question"
)

// Question is a subagent's open question to the person (ask_user).
type Question = question.Question

// Questions lists the open questions of a main session's subagents (""
// : every session's).
func (r *Runtime) Questions(session string) []Question {
	qs := r.in.Subagent.Questions(session)
	for i := range qs {
		qs[i].Text = r.in.Redactor.String(qs[i].Text)
	}
	return qs
}

// Answer answers a subagent's question in a main session, as the
// person: id names it, or "" picks the only one open. The answer becomes
// the subagent's ask_user result. It fails with ErrReadOnly, ErrInvalid
// (an empty answer; several questions open and id "") or ErrNoQuestion
// (none open, or no question id open in the session).
func (r *Runtime) Answer(session, id, answer string) (Question, error) {
	if err := r.writable(); err != nil {
		return Question{}, err
	}
	if strings.TrimSpace(answer) == "" {
		return Question{}, fmt.Errorf("answer: %w", question.ErrEmptyAnswer)
	}
	if id == "" {
		var err error
		if id, err = r.onlyQuestion(session); err != nil {
			return Question{}, err
		}
	}
	q, err := r.in.Subagent.AnswerQuestion(id, session, answer, question.ByPerson)
	if err != nil {
		return Question{}, err
	}
	q.Text = r.in.Redactor.String(q.Text)
	return q, nil
}

// onlyQuestion is the ID of the one question open in session.
func (r *Runtime) onlyQuestion(session string) (string, error) {
	open := r.in.Subagent.Questions(session)
	switch len(open) {
	case 0:
		return "", fmt.Errorf("answer: %w in session %s", ErrNoQuestion, session)
	case 1:
		return open[0].ID, nil
	}
	ids := make([]string, len(open))
	for i, q := range open {
		ids[i] = q.ID
	}
	return "", invalidf("answer: %d questions are open (%s): name one", len(open), strings.Join(ids, ", "))
}

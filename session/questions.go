package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/tool"
)

// questionAsked is the observer (Config.OrchestratorAnswers) that has
// the orchestrator answer a question, in a goroutine of the service's
// own: the answer waits for a turn, which must not hold up the
// observer's next notices.
func (s *Service) questionAsked(_ context.Context, q observe.QuestionAsked) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Go(func() {
		s.answerForThePerson(s.ctx, question.Question{ID: q.QuestionID, Session: q.Session, SubagentID: q.SubagentID, Role: q.Role,
			Text: q.Text, AskedAt: q.Time, ExpiresAt: q.ExpiresAt})
	})
}

// answerForThePerson has the orchestrator answer a subagent's question
// (Config.OrchestratorAnswers): a turn of the parent session, queued
// behind any running one, whose answer goes back to the subagent. The
// question is marked as the subagent's words (untrusted). The person may
// answer first; then the orchestrator's answer is dropped.
func (s *Service) answerForThePerson(ctx context.Context, q question.Question) {
	if s.State(q.Session) == Running {
		// The running turn may be waiting for this very subagent: a turn
		// queued behind it would come only after the question's limit.
		s.log.Info("a subagent's question is left to the person: its session's turn is running", "question", q.ID)
		return
	}
	msg := fmt.Sprintf("[Subagent %s (%s) asks you, question %s]\n%s\n\nYou answer the subagents' questions for the person. "+
		"Reply with the answer only: your reply goes back to the subagent as it is.",
		q.SubagentID, q.Role, q.ID, tool.Untrusted("subagent "+q.SubagentID, q.Text))
	turn, err := s.Send(ctx, q.Session, msg, SendOptions{Queue: true})
	if err != nil {
		s.log.Warn("the orchestrator cannot answer a subagent's question", "question", q.ID, "err", err)
		return
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Status != lifecycle.Success || strings.TrimSpace(res.Text) == "" {
		s.log.Warn("the orchestrator did not answer a subagent's question", "question", q.ID, "status", res.Status, "err", err)
		return
	}
	if _, err := s.cfg.Subagents.AnswerQuestion(q.ID, q.Session, res.Text, question.ByOrchestrator); err != nil && !errors.Is(err, question.ErrNoQuestion) {
		s.log.Warn("answer a subagent's question", "question", q.ID, "err", err)
	}
}

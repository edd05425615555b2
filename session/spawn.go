package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// SubagentConfig is what a direct spawn asks for: role, task, context,
// model and limits (subagent.Config).
type SubagentConfig = subagent.Config

// SubagentResult is a finished subagent's structured result
// (subagent.Result).
type SubagentResult = subagent.Result

// Subagent is a running or finished subagent (subagent.Handle): its ID,
// status, event stream, result and cancel.
type Subagent = subagent.Handle

// Proposal is a spawn awaiting the person's confirmation
// (subagent.Proposal).
type Proposal = subagent.Proposal

// ErrNoSubagents means the service runs without a subagent manager
// (a read-only instance).
var ErrNoSubagents = errors.New("this instance runs no subagents")

// Spawn starts one subagent on behalf of the main session parent, as the
// person (not the orchestrator) asked for it: `ava spawn` uses it. The
// subagent's result is delivered to parent like any other. When the
// confirmation policy asks for it, nothing starts: the spawn becomes a
// proposal (the second result) that the person confirms through the
// API; exactly one of the two results is set on success.
func (s *Service) Spawn(ctx context.Context, parent string, cfg SubagentConfig, user string) (*Subagent, *Proposal, error) {
	if s.cfg.Subagents == nil {
		return nil, nil, ErrNoSubagents
	}
	if IsSubagentKey(parent) {
		return nil, nil, fmt.Errorf("spawn from %s: a subagent cannot spawn subagents", parent)
	}
	caller := tool.Caller{AgentID: event.OrchestratorID, SessionKey: parent, User: user}
	h, p, err := s.cfg.Subagents.SpawnOrPropose(ctx, subagent.Request{Config: cfg, Parent: caller, User: user}, "")
	if err != nil {
		return nil, nil, fmt.Errorf("spawn %s: %w", cfg.Role, err)
	}
	return h, p, nil
}

// GroupRequest is what a direct group spawn asks for
// (subagent.GroupRequest); its Parent is set by SpawnGroup.
type GroupRequest = subagent.GroupRequest

// Group is a running parallel or chain group (subagent.Group).
type Group = subagent.Group

// SpawnGroup is Spawn for a group (parallel or chain) that the person
// asked for on behalf of the main session parent: the same hierarchy
// rule, limits and confirmation policy apply, and exactly one of the
// group and the proposal is returned on success. The rationale is
// shown to the person when the spawn needs their confirmation.
func (s *Service) SpawnGroup(ctx context.Context, parent string, req GroupRequest, user, rationale string) (*Group, *Proposal, error) {
	if s.cfg.Subagents == nil {
		return nil, nil, ErrNoSubagents
	}
	if IsSubagentKey(parent) {
		return nil, nil, fmt.Errorf("spawn from %s: a subagent cannot spawn subagents", parent)
	}
	req.Parent = tool.Caller{AgentID: event.OrchestratorID, SessionKey: parent, User: user}
	req.User = user
	g, p, err := s.cfg.Subagents.SpawnGroupOrPropose(ctx, req, rationale)
	if err != nil {
		return nil, nil, fmt.Errorf("spawn %s group: %w", req.Mode, err)
	}
	return g, p, nil
}

// Trace returns the last n steps of a subagent that parent started, one
// formatted line each (`ava logs` form); another session's subagent is
// refused as unknown.
func (s *Service) Trace(ctx context.Context, parent, id string, n int) ([]string, error) {
	if s.cfg.Subagents == nil || s.cfg.Traces == nil {
		return nil, ErrNoSubagents
	}
	h, err := s.cfg.Subagents.Get(id)
	if err != nil || h.Status().Parent != parent {
		return nil, fmt.Errorf("no subagent %s in session %s", id, parent)
	}
	evs, _, err := s.cfg.Traces.Recent(ctx, h.ID(), n)
	if err != nil {
		return nil, fmt.Errorf("trace of %s: %w", h.ID(), err)
	}
	return formatLines(evs), nil
}

// History returns the last n audit entries of a session (its
// messages, tool calls and subagent events), one formatted line each.
func (s *Service) History(ctx context.Context, key string, n int) ([]string, error) {
	if s.cfg.Traces == nil {
		return nil, errors.New("history: this instance reads no audit log")
	}
	evs, _, err := s.cfg.Traces.Query(ctx, audit.Query{Session: key, Limit: n})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	return formatLines(evs), nil
}

// formatLines renders audit entries as `ava logs` prints them.
func formatLines(evs []event.Event) []string {
	lines := make([]string, 0, len(evs))
	for _, ev := range evs {
		lines = append(lines, audit.FormatLine(ev, audit.FormatOptions{}))
	}
	return lines
}

// DecideButton applies a yes or no pressed on a chat's proposal button:
// only a proposal of that session is decided (another chat's is unknown
// here); the answer says what happened, in words for the chat. An
// expired or already decided proposal is answered, not an error.
func (s *Service) DecideButton(ctx context.Context, session, pendingID string, yes bool) (string, error) {
	if s.cfg.Subagents == nil {
		return "", ErrNoSubagents
	}
	p, err := s.cfg.Subagents.Proposal(ctx, pendingID)
	if err != nil || p.SessionKey != session {
		return "This proposal is not one of this chat's.", nil
	}
	d := confirm.Rejected
	if yes {
		d = confirm.Confirmed
	}
	res, err := s.cfg.Subagents.Decide(ctx, pendingID, d, confirm.Change{})
	switch {
	case errors.Is(err, store.ErrExpired):
		return "This proposal expired; ask again if you still want it.", nil
	case errors.Is(err, subagent.ErrDecided):
		return "This proposal was already answered.", nil
	case err != nil:
		return "", err
	case res.Decision == string(confirm.Rejected):
		return "Not started.", nil
	}
	return "Started " + strings.Join(res.SubagentIDs, ", ") + ".", nil
}

// Question is a subagent's open question to the person
// (question.Question).
type Question = question.Question

// Questions lists the open questions of a main session's subagents.
func (s *Service) Questions(key string) []Question {
	if s.cfg.Subagents == nil {
		return nil
	}
	return s.cfg.Subagents.Questions(key)
}

// Answer answers a subagent's question in a main session: id names it,
// or "" picks the only one open. The answer becomes the subagent's
// ask_user result.
func (s *Service) Answer(key, id, answer string) (Question, error) {
	if s.cfg.Subagents == nil {
		return Question{}, ErrNoSubagents
	}
	if id == "" {
		open := s.cfg.Subagents.Questions(key)
		switch len(open) {
		case 0:
			return Question{}, fmt.Errorf("answer: %w in session %s", question.ErrNoQuestion, key)
		case 1:
			id = open[0].ID
		default:
			ids := make([]string, len(open))
			for i, q := range open {
				ids[i] = q.ID
			}
			return Question{}, fmt.Errorf("answer: %d questions are open (%s): name one", len(open), strings.Join(ids, ", "))
		}
	}
	return s.cfg.Subagents.AnswerQuestion(id, key, answer, question.ByPerson)
}

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
		s.answerForThePerson(s.ctx, Question{ID: q.QuestionID, Session: q.Session, SubagentID: q.SubagentID, Role: q.Role,
			Text: q.Text, AskedAt: q.Time, ExpiresAt: q.ExpiresAt})
	})
}

// answerForThePerson has the orchestrator answer a subagent's question
// (Config.OrchestratorAnswers): a turn of the parent session, queued
// behind any running one, whose answer goes back to the subagent. The
// question is marked as the subagent's words (untrusted). The person may
// answer first; then the orchestrator's answer is dropped.
func (s *Service) answerForThePerson(ctx context.Context, q Question) {
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

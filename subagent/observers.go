package subagent

import (
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/store"
)

// The manager tells the observers (Options.Observers) what happened,
// each notice after the store write that makes it true: a run's start
// (turn, after recordRun), its first turn's end or a follow-up's
// (finish, after recordEnd), a run ended by recovery (recordInterrupted),
// proposals made and decided (propose, reject, confirmProposal,
// ExpireProposals), questions asked and closed (ask). Free text in a
// notice (errors, tasks, questions, answers) is masked as in the store.

// mask masks a notice's free text with the manager's redactor.
func (m *Manager) mask(s string) string { return orPatterns(m.opt.Redactor).String(s) }

// observed is the run as the observers name it.
func (h *Handle) observed() observe.Run {
	return observe.Run{RunID: h.uuid, SubagentID: h.id, Session: h.SessionKey(), Parent: h.req.Parent.SessionKey,
		ParentAgent: h.req.Parent.AgentID, Role: h.role.Name, Mode: string(h.req.mode), GroupID: h.req.groupID, Attempt: h.attempt}
}

// noticeStart tells the observers that the run is running for the first
// time in this process (resumed: taken over from a gone process).
func (h *Handle) noticeStart(start time.Time, resumed bool) {
	h.m.opt.Observers.NotifyRunStarted(observe.RunStarted{Run: h.observed(), Resumed: resumed, Time: start})
}

// noticeEnd tells the observers how a turn ended, once its end is
// recorded: the run's end for the turn that started it (or for a run
// that ended before it started), else a follow-up's TurnEnded.
func (h *Handle) noticeEnd(runEnd bool, status lifecycle.Status, fin *store.RunFinish) {
	h.mu.Lock()
	first := h.firstStart
	h.mu.Unlock()
	figures := observe.Figures{Tokens: fin.Tokens, CostCents: fin.CostCents, Iterations: fin.Iterations, Elapsed: fin.Active,
		Wall: wallOf(first, fin.EndedAt)}
	if runEnd {
		h.m.opt.Observers.NotifyRunEnded(observe.RunEnded{Run: h.observed(), Status: status, Error: h.m.mask(fin.Error),
			Figures: figures, Time: fin.EndedAt})
		return
	}
	h.mu.Lock()
	turns := h.turns
	h.mu.Unlock()
	h.m.opt.Observers.NotifyTurnEnded(observe.TurnEnded{Session: h.SessionKey(), Parent: h.req.Parent.SessionKey, RunID: h.uuid,
		SubagentID: h.id, Role: h.role.Name, Turn: turns, Status: status, Error: h.m.mask(fin.Error), Figures: figures, Time: fin.EndedAt})
}

// noticeInterrupted tells the observers of a run recovery ended.
func (m *Manager) noticeInterrupted(r store.Run, end time.Time) {
	m.opt.Observers.NotifyRunEnded(observe.RunEnded{Run: observe.Run{RunID: r.ID, SubagentID: r.ShortID, Session: r.SessionKey,
		Parent: r.ParentSession, ParentAgent: r.ParentAgent, Role: r.Role, Mode: r.Mode, GroupID: r.GroupID, Attempt: r.Attempts},
		Status: lifecycle.Interrupted, Error: m.mask(r.Error), Figures: observe.Figures{Tokens: r.Tokens, CostCents: r.CostCents, Iterations: r.Iterations, Elapsed: r.Active,
			Wall: wallOf(derefTime(r.StartedAt), end)},
		Time: end})
}

// wallOf is the wall time from first to end (0 when it never started).
func wallOf(first, end time.Time) time.Duration {
	if first.IsZero() || end.Before(first) {
		return 0
	}
	return end.Sub(first)
}

// derefTime is *t, or the zero time for nil.
func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// noticeProposed tells the observers of a stored proposal.
func (pp *proposals) noticeProposed(p Proposal) {
	pp.observers.NotifyProposalMade(observe.ProposalMade{ProposalID: p.ID, Session: p.SessionKey, Role: p.Role, Mode: string(p.Mode),
		Task: pp.mask(p.Task), MaxCostCents: p.Estimate.MaxCostCents, ExpiresAt: p.ExpiresAt, Time: p.CreatedAt})
}

// noticeDecided tells the observers of a stored decision.
func (pp *proposals) noticeDecided(p Proposal, d observe.Decision, by string, out Decided) {
	pp.observers.NotifyProposalDecided(observe.ProposalDecided{ProposalID: p.ID, Session: p.SessionKey, Role: p.Role, Decision: d,
		Change: out.Change, By: by, SubagentIDs: out.SubagentIDs, GroupID: out.GroupID, Time: pp.now()})
}

// noticeAsked tells the observers of a question put to the person.
func (h *Handle) noticeAsked(q question.Question) {
	h.m.opt.Observers.NotifyQuestionAsked(observe.QuestionAsked{QuestionID: q.ID, Session: q.Session, RunID: h.uuid, SubagentID: q.SubagentID,
		Role: q.Role, Text: h.m.mask(q.Text), ExpiresAt: q.ExpiresAt, Time: q.AskedAt})
}

// noticeAnswered tells the observers how a question was closed.
func (h *Handle) noticeAnswered(q question.Question, a question.Answer) {
	h.m.opt.Observers.NotifyQuestionAnswered(observe.QuestionAnswered{QuestionID: q.ID, Session: q.Session, RunID: h.uuid,
		SubagentID: q.SubagentID, Role: q.Role, Answer: h.m.mask(a.Text), By: a.By, Time: h.m.now()})
}

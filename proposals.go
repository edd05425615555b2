package ava

import (
	"context"
	"fmt"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/subagent"
)

// Proposal is a spawn awaiting the person's confirmation: what would
// run, the estimate, the rationale, and the text shown to the person.
type Proposal = subagent.Proposal

// Proposal kinds: a spawn of subagents, or a long run_bash or
// python_exec call of the orchestrator's that waits in its turn for the
// person (Proposal.Kind, event.SpawnProposedContent.Kind).
const (
	KindSpawn   = subagent.KindSpawn
	KindProcess = subagent.KindProcess
)

// Decided is a decided proposal and what it started.
type Decided = subagent.Decided

// Decision is the person's decision on a proposal: Confirmed, Rejected
// or Modified (with a Change).
type Decision = confirm.Decision

// The decisions.
const (
	Confirmed = confirm.Confirmed
	Rejected  = confirm.Rejected
	Modified  = confirm.Modified
)

// Change is what a Modified decision changes: model and limits.
type Change = confirm.Change

// Proposals lists the pending proposals of a main session ("" : every
// session's), oldest first; its error is the store's.
func (r *Runtime) Proposals(ctx context.Context, session string) ([]Proposal, error) {
	ps, err := r.in.Subagent.Proposals(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("list proposals: %w", err)
	}
	for i := range ps {
		ps[i] = r.maskProposal(ps[i])
	}
	return ps, nil
}

// Proposal returns one proposal, pending or decided; an unknown ID is
// ErrNotFound.
func (r *Runtime) Proposal(ctx context.Context, id string) (Proposal, error) {
	p, err := r.in.Subagent.Proposal(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	return r.maskProposal(p), nil
}

// Decide applies a decision to proposal id: Confirmed starts it as
// proposed, Modified applies the change first, Rejected drops it. Within
// a session (session != ""), only that session's proposals are decided:
// another's is ErrNotFound, so a chat can only answer its own. A decided
// proposal is ErrDecided, an expired one ErrExpired; a confirmation that
// cannot start is Spawn's error (ErrLimit, ErrBudget).
func (r *Runtime) Decide(ctx context.Context, session, id string, d Decision, c Change) (Decided, error) {
	if err := r.writable(); err != nil {
		return Decided{}, err
	}
	if err := r.ownProposal(ctx, session, id); err != nil {
		return Decided{}, err
	}
	res, err := r.in.Subagent.Decide(ctx, id, d, c)
	if err != nil {
		return Decided{}, err
	}
	res.Proposal = r.maskProposal(res.Proposal)
	return res, nil
}

// DecideWords decides proposal id from the person's own words ("yes",
// "no", "yes but use haiku"): an answer that is none of these is
// ErrUnclear and decides nothing. The session rule of Decide applies.
func (r *Runtime) DecideWords(ctx context.Context, session, id, words string) (Decided, error) {
	if err := r.writable(); err != nil {
		return Decided{}, err
	}
	if err := r.ownProposal(ctx, session, id); err != nil {
		return Decided{}, err
	}
	res, err := r.in.Subagent.Answer(ctx, id, words)
	if err != nil {
		return Decided{}, err
	}
	res.Proposal = r.maskProposal(res.Proposal)
	return res, nil
}

// ownProposal checks that proposal id belongs to session (when named).
func (r *Runtime) ownProposal(ctx context.Context, session, id string) error {
	if session == "" {
		return nil
	}
	p, err := r.in.Subagent.Proposal(ctx, id)
	if err != nil {
		return err
	}
	if p.SessionKey != session {
		return fmt.Errorf("proposal %s in session %s: %w", id, session, ErrNotFound)
	}
	return nil
}

// maskProposal masks a proposal's free text (the store masked it when
// it was written; a redactor that learned a secret since masks it now).
func (r *Runtime) maskProposal(p Proposal) Proposal {
	red := r.in.Redactor
	p.Task, p.Rationale, p.Text = red.String(p.Task), red.String(p.Rationale), red.String(p.Text)
	tasks := make([]string, len(p.Tasks))
	for i, t := range p.Tasks {
		tasks[i] = red.String(t)
	}
	if p.Tasks != nil {
		p.Tasks = tasks
	}
	return p
}

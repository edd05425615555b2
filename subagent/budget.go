package subagent

import (
	"context"
	"fmt"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/budget"
)

// sessionShare joins the turn to its parent session's budget in the
// ledger when the session has one: the turn's calls reserve from what
// the session's turns and subagents together have left. Nil when it has
// none (or no parent). The caller leaves the share once the turn's end
// (and so its spend) is stored.
func (h *Handle) sessionShare() (*budget.Share, error) {
	session := h.req.Parent.SessionKey
	if session == "" {
		return nil, nil
	}
	var st budget.Standing
	err := h.m.ride(func(ctx context.Context) (err error) {
		st, err = h.m.opt.Ledger.Standing(ctx, session)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the parent session's budget: %w", err)
	}
	if !st.Limited {
		return nil, nil
	}
	return h.m.opt.Ledger.Join(session), nil
}

// budgets returns the shared budgets a turn's calls reserve from: the
// group's, the session's, both or none.
func budgets(group agent.Budget, session *budget.Share) agent.Budget {
	switch {
	case session == nil:
		return group
	case group == nil:
		return session
	}
	return both{group, session}
}

// both is two shared budgets: a call reserves from the first, then what
// it was granted (or less) from the second, and settles both.
type both struct{ first, second agent.Budget }

// Reserve implements agent.Budget.
func (b both) Reserve(ctx context.Context, want, least float64) (float64, func(float64), error) {
	g1, settle1, err := b.first.Reserve(ctx, want, least)
	if err != nil {
		return 0, nil, err
	}
	g2, settle2, err := b.second.Reserve(ctx, g1, least)
	if err != nil {
		settle1(0)
		return 0, nil, err
	}
	return g2, func(spent float64) { settle1(spent); settle2(spent) }, nil
}

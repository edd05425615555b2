package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/store"
)

// Decide applies the person's decision to proposal id: Confirmed starts
// it as proposed, Modified applies c first (checked like a new spawn and
// estimated again), Rejected drops it. A confirmed proposal runs in the
// background: its result reaches the parent as a [Subagent] message. A
// spawn refused when it starts (every slot taken, budget spent) leaves
// the proposal pending, so the person may try again.
//
// It fails with an error wrapping store.ErrNotFound for an unknown ID,
// ErrDecided when the proposal is decided (or being decided by another
// call), store.ErrExpired past its expiry, and ErrBadDecision for an
// Unclear decision or a Modified one that changes nothing. Within one
// process a proposal is decided once; across processes the store's
// conditional update decides, and a loser's started runs are cancelled.
func (m *Manager) Decide(ctx context.Context, id string, d confirm.Decision, c confirm.Change) (Decided, error) {
	if err := checkDecision(d, c); err != nil {
		return Decided{}, err
	}
	if !m.claim(id) {
		return Decided{}, fmt.Errorf("decide %s: %w: another answer is being applied", id, ErrDecided)
	}
	defer m.unclaim(id)
	p, err := m.Proposal(ctx, id)
	if err != nil {
		return Decided{}, fmt.Errorf("decide %s: %w", id, err)
	}
	if p.Status != store.SpawnPending {
		return Decided{}, fmt.Errorf("decide %s: it is already %s: %w (%w)", id, p.Status, ErrDecided, store.ErrInvalidTransition)
	}
	if !m.now().Before(p.ExpiresAt) {
		if _, err := m.ExpireProposals(ctx); err != nil {
			return Decided{}, err
		}
		return Decided{}, fmt.Errorf("decide %s: it expired at %s: %w", id, p.ExpiresAt.Format(time.RFC3339), store.ErrExpired)
	}
	if d == confirm.Rejected {
		return m.reject(ctx, p)
	}
	return m.confirmProposal(ctx, p, d, c)
}

func checkDecision(d confirm.Decision, c confirm.Change) error {
	switch {
	case d == confirm.Modified && c.IsZero():
		return fmt.Errorf("%w: modify needs a change (model, max cost, timeout, max tokens or max iterations)", ErrBadDecision)
	case d == confirm.Confirmed || d == confirm.Rejected || d == confirm.Modified:
		return nil
	}
	return fmt.Errorf("%w: %q, want confirmed, rejected or modified", ErrBadDecision, d)
}

// Answer decides proposal id from the person's own words (confirm.Parse).
// An answer that is not clearly a yes, a no or a change gives ErrUnclear
// and decides nothing: the person is asked again.
func (m *Manager) Answer(ctx context.Context, id, text string) (Decided, error) {
	a := confirm.Parse(text)
	if a.Decision == confirm.Unclear {
		return Decided{}, fmt.Errorf("answer to %s: %w", id, ErrUnclear)
	}
	return m.Decide(ctx, id, a.Decision, a.Change)
}

// claim marks id as being decided in this process; false if it already
// is.
func (m *Manager) claim(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deciding == nil {
		m.deciding = map[string]bool{}
	}
	if m.deciding[id] {
		return false
	}
	m.deciding[id] = true
	return true
}

func (m *Manager) unclaim(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.deciding, id)
}

func (m *Manager) reject(ctx context.Context, p Proposal) (Decided, error) {
	if err := m.opt.Store.DecidePending(ctx, p.ID, store.SpawnRejected, nil, ""); err != nil {
		return Decided{}, decideErr(p.ID, err)
	}
	m.proposalSpans.Delete(p.ID)
	p.Status = store.SpawnRejected
	m.publishTo(p.Spawn, event.New(event.SpawnDecided, event.SpawnDecidedContent{PendingID: p.ID, Decision: store.SpawnRejected}))
	m.tellParent(ctx, p, "The person declined it; nothing was started. Do not propose it again unless they ask.")
	out := Decided{Proposal: p, Decision: store.SpawnRejected}
	m.noticeDecided(p, observe.Rejected, observe.ByPerson, out)
	return out, nil
}

// decideErr maps the store's refusal to the flow's errors.
func decideErr(id string, err error) error {
	if errors.Is(err, store.ErrInvalidTransition) {
		return fmt.Errorf("decide %s: %w: %w", id, ErrDecided, err)
	}
	return fmt.Errorf("decide %s: %w", id, err)
}

// confirmProposal starts the (changed) proposal, then records the
// decision; should another process have decided it meanwhile, what was
// started is cancelled.
func (m *Manager) confirmProposal(ctx context.Context, p Proposal, d confirm.Decision, c confirm.Change) (Decided, error) {
	var newCfg json.RawMessage
	if d == confirm.Modified {
		p.Spawn.apply(c)
		est, err := m.estimateSpawn(ctx, p.Spawn)
		if err != nil {
			return Decided{}, fmt.Errorf("modify %s (%s): %w: %w", p.ID, c, ErrBadDecision, err)
		}
		p.Estimate = est
		if newCfg, err = json.Marshal(record{Spawn: p.Spawn, Estimate: est}); err != nil {
			return Decided{}, fmt.Errorf("modify %s: %w", p.ID, err)
		}
	}
	dec, cancel, err := m.startProposal(context.WithoutCancel(ctx), p)
	if err != nil {
		return Decided{}, fmt.Errorf("start %s: %w", p.ID, err)
	}
	if err := m.opt.Store.DecidePending(ctx, p.ID, store.SpawnConfirmed, newCfg, dec.runID); err != nil {
		cancel()
		return Decided{}, decideErr(p.ID, err)
	}
	p.Status = store.SpawnConfirmed
	out := Decided{Proposal: p, Decision: store.SpawnConfirmed, SubagentIDs: dec.ids, GroupID: dec.groupID}
	if d == confirm.Modified {
		out.Change = c.String()
	}
	m.publishTo(p.Spawn, event.New(event.SpawnDecided, event.SpawnDecidedContent{PendingID: p.ID, Decision: store.SpawnConfirmed,
		Change: out.Change, SubagentIDs: dec.ids}))
	note := fmt.Sprintf("The person confirmed it; started %s in the background. Its result will arrive as a [Subagent] message.", strings.Join(dec.ids, ", "))
	if out.Change != "" {
		note = fmt.Sprintf("The person confirmed it with a change (%s); started %s in the background. Its result will arrive as a [Subagent] message.", out.Change, strings.Join(dec.ids, ", "))
	}
	m.tellParent(ctx, p, note)
	d2 := observe.Confirmed
	if d == confirm.Modified {
		d2 = observe.Modified
	}
	m.noticeDecided(p, d2, observe.ByPerson, out)
	return out, nil
}

// started is what a confirmed proposal started.
type started struct {
	ids     []string
	groupID string
	runID   string
}

// startProposal starts the proposal's spawn in the background and
// returns what it started and how to cancel it.
func (m *Manager) startProposal(ctx context.Context, p Proposal) (started, func(), error) {
	ps := p.Spawn
	// The runs are children of the tool call that proposed them; when
	// that is not known, of the decision's span (Request.TraceParent).
	span := m.takeProposalSpan(p.ID)
	if ps.Mode == ModeSingle {
		h, err := m.Spawn(ctx, Request{Config: ps.Configs[0], Parent: ps.caller(), User: ps.User, Background: ps.Parent != "", Fork: ps.Fork,
			TraceParent: span})
		if err != nil {
			return started{}, nil, err
		}
		return started{ids: []string{h.ID()}, runID: h.UUID()}, h.Cancel, nil
	}
	g, err := m.SpawnGroup(ctx, GroupRequest{Configs: ps.Configs, Mode: ps.Mode, Parent: ps.caller(), User: ps.User,
		Background: ps.Parent != "", BudgetCents: ps.BudgetCents, Timeout: time.Duration(ps.TimeoutSeconds * float64(time.Second)), Fork: ps.Fork,
		TraceParent: span})
	if err != nil {
		return started{}, nil, err
	}
	s := started{groupID: g.ID, runID: g.ID}
	for _, h := range g.Handles() {
		s.ids = append(s.ids, h.ID())
	}
	return s, g.Cancel, nil
}

// ExpireProposals marks every proposal past its expiry as expired and
// tells each one's parent, once (the store returns each expiry to one
// caller only). It returns how many expired.
func (m *Manager) ExpireProposals(ctx context.Context) (int, error) {
	sps, err := m.opt.Store.ExpirePending(ctx, m.now())
	if err != nil {
		return 0, err
	}
	for _, sp := range sps {
		m.proposalSpans.Delete(sp.ID)
		p, err := proposalOf(sp)
		if err != nil {
			m.log.Error("expired proposal", "id", sp.ID, "err", err)
			continue
		}
		m.publishTo(p.Spawn, event.New(event.SpawnDecided, event.SpawnDecidedContent{PendingID: p.ID, Decision: store.SpawnExpired}))
		m.tellParent(ctx, p, fmt.Sprintf("It expired after %s without an answer from the person; nothing was started. Propose it again only if it is still needed.",
			confirm.FormatSeconds(p.ExpiresAt.Sub(p.CreatedAt).Seconds())))
		m.noticeDecided(p, observe.Expired, observe.ByExpiry, Decided{Proposal: p, Decision: store.SpawnExpired})
	}
	return len(sps), nil
}

// expireLoop expires proposals until the manager closes.
func (m *Manager) expireLoop() {
	every := m.opt.ExpireEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	m.every(every, func() {
		if _, err := m.ExpireProposals(m.ctx); err != nil && m.ctx.Err() == nil {
			m.log.Error("expire spawn proposals", "err", err)
		}
	})
}

// tellParent puts a [Subagent] note about proposal p into its parent's
// history, where the orchestrator sees it in its next prompt (like a
// background result, it starts no turn by itself).
func (m *Manager) tellParent(ctx context.Context, p Proposal, what string) {
	if p.Spawn.Parent == "" {
		return
	}
	text := fmt.Sprintf("[Spawn %s: %s — %s]\n%s\n", p.ID, p.Role, firstLine(p.Task, 200), what)
	blocks, _ := json.Marshal(llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text("[Subagent] " + text)}})
	msg := store.Message{SessionKey: p.Spawn.Parent, Role: store.RoleSubagent, Sender: store.SenderSubagent, Text: text, Blocks: blocks}
	if _, err := m.opt.Store.AppendMessage(context.WithoutCancel(ctx), msg); err != nil {
		m.log.Error("tell parent about proposal", "id", p.ID, "err", err)
	}
}

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

// decide applies the person's decision to proposal id: Confirmed starts
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
func (pp *proposals) decide(ctx context.Context, id string, d confirm.Decision, c confirm.Change) (Decided, error) {
	if err := checkDecision(d, c); err != nil {
		return Decided{}, err
	}
	if !pp.claim(id) {
		return Decided{}, fmt.Errorf("decide %s: %w: another answer is being applied", id, ErrDecided)
	}
	defer pp.unclaim(id)
	p, err := pp.get(ctx, id)
	if err != nil {
		return Decided{}, fmt.Errorf("decide %s: %w", id, err)
	}
	if p.Status != store.SpawnPending {
		return Decided{}, fmt.Errorf("decide %s: it is already %s: %w (%w)", id, p.Status, ErrDecided, store.ErrInvalidTransition)
	}
	if !pp.now().Before(p.ExpiresAt) {
		if _, err := pp.expire(ctx); err != nil {
			return Decided{}, err
		}
		return Decided{}, fmt.Errorf("decide %s: it expired at %s: %w", id, p.ExpiresAt.Format(time.RFC3339), store.ErrExpired)
	}
	if d == confirm.Rejected {
		return pp.reject(ctx, p)
	}
	if p.Spawn.Process != nil {
		return pp.confirmProcess(ctx, p, d, c)
	}
	return pp.confirmProposal(ctx, p, d, c)
}

// checkDecision refuses a decision that is not one, or a change of nothing.
func checkDecision(d confirm.Decision, c confirm.Change) error {
	switch {
	case d == confirm.Modified && c.IsZero():
		return fmt.Errorf("%w: modify needs a change (model, max cost, timeout, max tokens or max iterations)", ErrBadDecision)
	case d == confirm.Confirmed || d == confirm.Rejected || d == confirm.Modified:
		return nil
	}
	return fmt.Errorf("%w: %q, want confirmed, rejected or modified", ErrBadDecision, d)
}

// answer decides proposal id from the person's own words (confirm.Parse).
// An answer that is not clearly a yes, a no or a change gives ErrUnclear
// and decides nothing: the person is asked again.
func (pp *proposals) answer(ctx context.Context, id, text string) (Decided, error) {
	a := confirm.Parse(text)
	if a.Decision == confirm.Unclear {
		return Decided{}, fmt.Errorf("answer to %s: %w", id, ErrUnclear)
	}
	return pp.decide(ctx, id, a.Decision, a.Change)
}

// claim marks id as being decided in this process; false if it already
// is.
func (pp *proposals) claim(id string) bool {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.deciding == nil {
		pp.deciding = map[string]bool{}
	}
	if pp.deciding[id] {
		return false
	}
	pp.deciding[id] = true
	return true
}

// unclaim ends the claim on id.
func (pp *proposals) unclaim(id string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	delete(pp.deciding, id)
}

func (pp *proposals) reject(ctx context.Context, p Proposal) (Decided, error) {
	if err := pp.store.DecidePending(ctx, p.ID, store.SpawnRejected, nil, ""); err != nil {
		return Decided{}, decideErr(p.ID, err)
	}
	pp.spans.Delete(p.ID)
	p.Status = store.SpawnRejected
	pp.publishTo(p.Spawn, event.New(event.SpawnDecided, event.SpawnDecidedContent{PendingID: p.ID, Decision: store.SpawnRejected}))
	pp.waiters.wake(p.ID)
	pp.tellParent(ctx, p, "The person declined it; nothing was started. Do not propose it again unless they ask.")
	out := Decided{Proposal: p, Decision: store.SpawnRejected}
	pp.noticeDecided(p, observe.Rejected, observe.ByPerson, out)
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
func (pp *proposals) confirmProposal(ctx context.Context, p Proposal, d confirm.Decision, c confirm.Change) (Decided, error) {
	var newCfg json.RawMessage
	if d == confirm.Modified {
		p.Spawn.apply(c)
		est, err := pp.rt.estimateSpawn(ctx, p.Spawn)
		if err != nil {
			return Decided{}, fmt.Errorf("modify %s (%s): %w: %w", p.ID, c, ErrBadDecision, err)
		}
		p.Estimate = est
		if newCfg, err = json.Marshal(record{Spawn: p.Spawn, Estimate: est}); err != nil {
			return Decided{}, fmt.Errorf("modify %s: %w", p.ID, err)
		}
	}
	dec, cancel, err := pp.rt.startSpawn(context.WithoutCancel(ctx), p.Spawn, pp.takeSpan(p.ID))
	if err != nil {
		return Decided{}, fmt.Errorf("start %s: %w", p.ID, err)
	}
	if err := pp.store.DecidePending(ctx, p.ID, store.SpawnConfirmed, newCfg, dec.runID); err != nil {
		cancel()
		return Decided{}, decideErr(p.ID, err)
	}
	p.Status = store.SpawnConfirmed
	out := Decided{Proposal: p, Decision: store.SpawnConfirmed, SubagentIDs: dec.ids, GroupID: dec.groupID}
	if d == confirm.Modified {
		out.Change = c.String()
	}
	pp.publishTo(p.Spawn, event.New(event.SpawnDecided, event.SpawnDecidedContent{PendingID: p.ID, Decision: store.SpawnConfirmed,
		Change: out.Change, SubagentIDs: dec.ids}))
	note := fmt.Sprintf("The person confirmed it; started %s in the background. Its result will arrive as a [Subagent] message.", strings.Join(dec.ids, ", "))
	if out.Change != "" {
		note = fmt.Sprintf("The person confirmed it with a change (%s); started %s in the background. Its result will arrive as a [Subagent] message.", out.Change, strings.Join(dec.ids, ", "))
	}
	pp.tellParent(ctx, p, note)
	d2 := observe.Confirmed
	if d == confirm.Modified {
		d2 = observe.Modified
	}
	pp.noticeDecided(p, d2, observe.ByPerson, out)
	return out, nil
}

// expire marks every proposal past its expiry as expired and
// tells each one's parent, once (the store returns each expiry to one
// caller only). It returns how many expired.
func (pp *proposals) expire(ctx context.Context) (int, error) {
	sps, err := pp.store.ExpirePending(ctx, pp.now())
	if err != nil {
		return 0, err
	}
	for _, sp := range sps {
		pp.spans.Delete(sp.ID)
		p, err := proposalOf(sp)
		if err != nil {
			pp.log.Error("expired proposal", "id", sp.ID, "err", err)
			continue
		}
		pp.publishTo(p.Spawn, event.New(event.SpawnDecided, event.SpawnDecidedContent{PendingID: p.ID, Decision: store.SpawnExpired}))
		pp.waiters.wake(p.ID)
		pp.tellParent(ctx, p, fmt.Sprintf("It expired after %s without an answer from the person; nothing was started. Propose it again only if it is still needed.",
			confirm.FormatSeconds(p.ExpiresAt.Sub(p.CreatedAt).Seconds())))
		pp.noticeDecided(p, observe.Expired, observe.ByExpiry, Decided{Proposal: p, Decision: store.SpawnExpired})
	}
	return len(sps), nil
}

// tellParent puts a [Subagent] note about proposal p into its parent's
// history, where the orchestrator sees it in its next prompt (like a
// background result, it starts no turn by itself).
func (pp *proposals) tellParent(ctx context.Context, p Proposal, what string) {
	// A process proposal's answer goes back to its waiting tool call.
	if p.Spawn.Parent == "" || p.Spawn.Process != nil {
		return
	}
	text := fmt.Sprintf("[Spawn %s: %s — %s]\n%s\n", p.ID, p.Role, firstLine(p.Task, 200), what)
	blocks, _ := json.Marshal(llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text("[Subagent] " + text)}})
	msg := store.Message{SessionKey: p.Spawn.Parent, Role: store.RoleSubagent, Sender: store.SenderSubagent, Text: text, Blocks: blocks}
	if _, err := pp.store.AppendMessage(context.WithoutCancel(ctx), msg); err != nil {
		pp.log.Error("tell parent about proposal", "id", p.ID, "err", err)
	}
}

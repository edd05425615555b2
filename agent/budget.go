package agent

import (
	"context"
	"fmt"
	"math"

	"github.com/avaagent/ava/llm"
)

// Budget is a cost budget a run shares with other runs, such as a
// parallel group's aggregate budget. Before each model call the loop
// reserves what the call may cost at most; after it, the loop settles the
// reservation with what the call cost. Implementations must be safe for
// concurrent use by many runs.
type Budget interface {
	// Reserve sets aside at most want and at least least cents for one
	// model call and returns what it set aside (least ≤ granted ≤ want)
	// with settle, which the loop calls exactly once with the call's
	// actual cost (0 when the call failed) to release the reservation.
	// When not even least can be had, it returns an error wrapping
	// ErrCostExceeded. It may wait while other runs' reservations hold
	// what it needs, and returns ctx's cause if ctx ends first.
	Reserve(ctx context.Context, want, least float64) (granted float64, settle func(spent float64), err error)
}

// Estimate rule constants (see the package doc).
const (
	// charsPerToken is the first call's estimate of input tokens: UTF-8
	// bytes per token.
	charsPerToken = 4
	// messageOverheadTokens is added per message for its framing.
	messageOverheadTokens = 4
	// toolsOverheadTokens is added when a request offers tools, for the
	// tool-use instructions providers add (Anthropic documents ~350).
	toolsOverheadTokens = 400
	// minOutputTokens is the smallest output worth a call: a call whose
	// input cost leaves less than this is not made.
	minOutputTokens = 16
)

// defaultOutputLimit is taken as a response's output limit when none is
// configured: Anthropic's default, and within every listed model's
// maximum. A token cap lowers a response's limit only below it; under a
// cost bound the request always carries an explicit limit, because some
// providers have no default limit at all.
const defaultOutputLimit = 8192

// callPlan is what one model call may spend.
type callPlan struct {
	chars    int     // the request's size, for calibrating the estimate
	inTokens int     // estimated input tokens
	inCents  float64 // their estimated cost
	// costCut is set when the cost bound lowered the output limit: a
	// response cut there ended for lack of money.
	costCut bool
	settle  func(spent float64)
}

// inputSeen is what the provider reported for the previous request: the
// estimate of the next one builds on it.
type inputSeen struct {
	chars  int
	tokens int
	cents  float64
}

// costBounded reports whether model calls are bounded by cost: the model
// has a known, non-zero price and the run has a cap or a shared budget.
func (r *run) costBounded() bool {
	cfg := r.a.cfg
	p := cfg.Model.Price
	priced := cfg.Model.Priced && (p.Input > 0 || p.Output > 0 || p.CacheRead > 0 || p.CacheWrite > 0)
	return priced && (cfg.Limits.MaxCostCents > 0 || cfg.Budget != nil)
}

// plan sets req's output limit (and turns thinking off when the limit
// leaves no room for it) from the token cap and, for a priced model, from
// what is left of the cost cap and the shared budget. It reserves from
// the shared budget; the caller must call the plan's settle. A call that
// cannot fit is refused with ErrCostExceeded.
func (r *run) plan(req *llm.Request) (*callPlan, error) {
	p := &callPlan{settle: func(float64) {}}
	req.MaxTokens = r.outputCap()
	if !r.costBounded() {
		return p, nil
	}
	ceiling := req.MaxTokens
	if ceiling == 0 {
		ceiling = defaultOutputLimit
	}
	p.chars = requestChars(req)
	p.inTokens, p.inCents = r.estimateInput(req, p.chars)
	outRate := r.a.cfg.Model.Price.Output / 1e6
	least := p.inCents + minOutputTokens*outRate
	allowed := p.inCents + float64(ceiling)*outRate
	if capCents := r.a.cfg.Limits.MaxCostCents; capCents > 0 {
		allowed = min(allowed, capCents-r.cost)
		if allowed < least {
			return nil, fmt.Errorf("%w: the next call needs at least %.4f¢ (about %d input tokens and %d output) and %.4f¢ of the %.2f¢ cap is left",
				ErrCostExceeded, least, p.inTokens, minOutputTokens, max(capCents-r.cost, 0), capCents)
		}
	}
	if b := r.a.cfg.Budget; b != nil {
		granted, settle, err := b.Reserve(r.ctx, allowed, least)
		if err != nil {
			return nil, fmt.Errorf("reserve %.4f¢ for a call: %w", least, err)
		}
		allowed, p.settle = granted, settle
	}
	req.MaxTokens = ceiling
	if outRate > 0 {
		if afford := int((allowed-p.inCents)/outRate + 1e-9); afford < ceiling {
			req.MaxTokens, p.costCut = afford, true
		}
	}
	if req.ThinkingBudget > 0 && req.MaxTokens <= req.ThinkingBudget {
		req.ThinkingBudget = 0
	}
	return p, nil
}

// estimateInput estimates a request's input tokens and their cost. The
// first request is counted at charsPerToken plus framing, priced at the
// model's highest input rate (a cache write, where it has one). A later
// one is the previous request as the provider counted and charged it,
// plus what was added since at the tokens per byte the provider reported
// for the previous request, priced at the highest input rate.
func (r *run) estimateInput(req *llm.Request, chars int) (int, float64) {
	price := r.a.cfg.Model.Price
	top := max(price.Input, price.CacheWrite) / 1e6
	seen := r.seen
	if seen.tokens <= 0 || seen.chars <= 0 || chars < seen.chars {
		tokens := chars/charsPerToken + 1 + messageOverheadTokens*len(req.Messages)
		if len(req.Tools) > 0 {
			tokens += toolsOverheadTokens
		}
		return tokens, float64(tokens) * top
	}
	perByte := float64(seen.tokens) / float64(seen.chars)
	added := int(math.Ceil(float64(chars-seen.chars)*perByte)) + 1
	return seen.tokens + added, seen.cents + float64(added)*top
}

// observe records what the provider reported for a request's input.
func (r *run) observe(p *callPlan, u llm.Usage) {
	if p.chars == 0 {
		return
	}
	in := llm.Usage{InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	r.seen = inputSeen{chars: p.chars, tokens: in.Total(), cents: r.a.cfg.Model.Price.Cost(in)}
}

// requestChars is the size of what a request sends, in UTF-8 bytes: the
// system prompt, every block's text, tool input and output, and the tool
// definitions.
func requestChars(req *llm.Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Input) + len(b.Content) + len(b.ToolName) + len(b.Data)
		}
	}
	for _, d := range req.Tools {
		n += len(d.Name) + len(d.Description) + len(d.Schema)
	}
	return n
}

// overCapAtEnd reports a final answer that may not count as success: one
// whose run ended above its cost cap, or one the cost bound cut short.
// The answer's text is kept either way.
func (r *run) overCapAtEnd(p *callPlan, resp *llm.Response) error {
	capCents := r.a.cfg.Limits.MaxCostCents
	if capCents > 0 && r.cost > capCents {
		return fmt.Errorf("%w: the final answer brought the run to %.4f¢ of its %.2f¢ cap (kept)", ErrCostExceeded, r.cost, capCents)
	}
	if p.costCut && resp.StopReason == llm.StopMaxTokens {
		return fmt.Errorf("%w: the answer was cut at %d output tokens, all that the cost cap or shared budget left room for (kept)",
			ErrCostExceeded, resp.Usage.OutputTokens)
	}
	return nil
}

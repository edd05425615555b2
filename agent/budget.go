package agent

import (
	"bytes"
	"context"
	"fmt"

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

// Estimate rule constants (see the package doc and estimateTokens).
const (
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
	msgs     int     // the request's messages, for the next estimate
	inTokens int     // estimated input tokens
	inCents  float64 // their estimated cost
	// searchCents is what the provider's searches may cost at most
	// (ServerTools.MaxUses at the model's price per search).
	searchCents float64
	// costCut is set when the cost bound lowered the output limit: a
	// response cut there ended for lack of money.
	costCut bool
	// shared is set when a shared budget granted the call granted
	// cents; cost is what the call did cost.
	shared        bool
	granted, cost float64
	settle        func(spent float64)
}

// inputSeen is what the provider reported for the previous request: the
// estimate of the next one builds on it.
type inputSeen struct {
	msgs   int // messages in it
	tokens int
	cents  float64
}

// costBounded reports whether model calls are bounded by cost: the model
// has a known, non-zero price and the run has a cap or a shared budget.
func (r *run) costBounded() bool {
	cfg := r.a.cfg
	p := cfg.Model.Price
	priced := cfg.Model.Priced && (p.Input > 0 || p.Output > 0 || p.CacheRead > 0 || p.CacheWrite > 0 || p.PerSearch > 0)
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
	p.msgs = len(req.Messages)
	p.inTokens, p.inCents = r.estimateInput(req)
	p.searchCents = searchReserve(req.ServerTools, r.a.cfg.Model.Price)
	fixed := p.inCents + p.searchCents
	outRate := r.a.cfg.Model.Price.Output / 1e6
	least := fixed + minOutputTokens*outRate
	allowed := fixed + float64(ceiling)*outRate
	if capCents := r.a.cfg.Limits.MaxCostCents; capCents > 0 {
		allowed = min(allowed, capCents-r.cost)
		if allowed < least {
			return nil, fmt.Errorf("%w: the next call needs at least %.4f¢ (about %d input tokens and %d output%s) and %.4f¢ of the %.2f¢ cap is left",
				ErrCostExceeded, least, p.inTokens, minOutputTokens, searchNote(p.searchCents), max(capCents-r.cost, 0), capCents)
		}
	}
	if b := r.a.cfg.Budget; b != nil {
		granted, settle, err := b.Reserve(r.ctx, allowed, least)
		if err != nil {
			return nil, fmt.Errorf("reserve %.4f¢ for a call: %w", least, err)
		}
		if granted < least {
			settle(0)
			return nil, fmt.Errorf("%w: the shared budget granted %.4f¢ of the %.4f¢ the call needs at least", ErrCostExceeded, granted, least)
		}
		allowed, p.settle, p.shared, p.granted = granted, settle, true, granted
	}
	req.MaxTokens = ceiling
	if outRate > 0 {
		if afford := int((allowed-fixed)/outRate + 1e-9); afford < ceiling {
			req.MaxTokens, p.costCut = afford, true
		}
	}
	if req.ThinkingBudget > 0 && req.MaxTokens <= req.ThinkingBudget {
		req.ThinkingBudget = 0
	}
	return p, nil
}

// estimateInput estimates a request's input tokens and their cost. What
// the provider counted for the previous request of this run is taken at
// its count and at the rate it was charged; the messages added since (all
// of the request, with the system prompt and tool definitions, on the
// first call) are estimated by estimateTokens plus framing, priced at the
// model's highest input rate (a cache write, where it has one).
func (r *run) estimateInput(req *llm.Request) (int, float64) {
	price := r.a.cfg.Model.Price
	top := max(price.Input, price.CacheWrite) / 1e6
	if seen := r.seen; seen.tokens > 0 && seen.msgs <= len(req.Messages) {
		added := messagesTokens(req.Messages[seen.msgs:])
		return seen.tokens + added, seen.cents + float64(added)*top
	}
	tokens := estimateTokens(req.System) + messagesTokens(req.Messages)
	if len(req.Tools) > 0 {
		tokens += toolsOverheadTokens
		for _, d := range req.Tools {
			tokens += estimateTokens(d.Name) + estimateTokens(d.Description) + estimateTokens(string(d.Schema))
		}
	}
	return tokens, float64(tokens) * top
}

// searchReserve is what the provider's searches in one call may cost at
// most: each use it allows at the model's price per search. Without a
// cap on uses nothing is reserved (the subagent layer always sets one).
func searchReserve(st *llm.ServerTools, p llm.Price) float64 {
	if st == nil || !st.WebSearch || st.MaxUses <= 0 {
		return 0
	}
	return float64(st.MaxUses) * p.PerSearch
}

// searchNote names the searches' reserve in a refusal.
func searchNote(cents float64) string {
	if cents == 0 {
		return ""
	}
	return fmt.Sprintf(", with %.2f¢ for the provider's searches", cents)
}

// observe records what the provider reported for a request's input.
func (r *run) observe(p *callPlan, u llm.Usage) {
	if p.msgs == 0 {
		return
	}
	in := llm.Usage{InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	r.seen = inputSeen{msgs: p.msgs, tokens: in.Total(), cents: r.a.cfg.Model.Price.Cost(in)}
}

// messagesTokens estimates messages' tokens, framing included.
func messagesTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageOverheadTokens
		var lastRaw []byte
		for _, b := range m.Content {
			if len(b.Raw) > 0 {
				// The block as the provider sent it, and gets it back:
				// it holds the text, arguments or query read from it.
				// Blocks read from one item share its raw JSON (OpenAI's
				// search call and its result): it is sent, and counted,
				// once.
				if !bytes.Equal(b.Raw, lastRaw) {
					n += estimateTokens(string(b.Raw))
				}
				lastRaw = b.Raw
				continue
			}
			n += estimateTokens(b.Text) + estimateTokens(string(b.Input)) + estimateTokens(b.Content) +
				estimateTokens(b.ToolName) + estimateTokens(b.Data)
		}
	}
	return n
}

// estimateTokens is an estimate of s's tokens meant to be at or above what
// byte-pair tokenizers count: a run of ASCII letters is a token per 4
// letters, a run of digits a token per 3 (tokenizers group at most 3), each
// other ASCII symbol a token, a run of non-ASCII bytes a token per 2 bytes
// (a CJK character is 3 bytes and 1 to 1.5 tokens), a run of line breaks a
// token; spaces and tabs are free (they join the next word). Counted by
// hand against GPT-style tokens, prose comes out ~1.4 times the real
// count, JSON ~1.9, digits and commas ~1.
func estimateTokens(s string) int {
	n := 0
	for i := 0; i < len(s); {
		class, j := classOf[s[i]], i+1
		if class != classSymbol {
			for j < len(s) && classOf[s[j]] == class {
				j++
			}
		}
		switch class {
		case classLetter:
			n += (j - i + 3) / 4
		case classDigit:
			n += (j - i + 2) / 3
		case classOther:
			n += (j - i + 1) / 2
		case classSymbol, classBreak:
			n++
		}
		i = j
	}
	return n
}

// Character classes of estimateTokens.
const (
	classSpace uint8 = iota
	classLetter
	classDigit
	classSymbol
	classBreak
	classOther
)

// classOf maps each byte to its class.
var classOf = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == ' ' || c == '\t':
			t[c] = classSpace
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			t[c] = classLetter
		case c >= '0' && c <= '9':
			t[c] = classDigit
		case c == '\n' || c == '\r':
			t[c] = classBreak
		case c >= 0x80:
			t[c] = classOther
		default:
			t[c] = classSymbol
		}
	}
	return t
}()

// overCapAtEnd reports a final answer that may not count as success: one
// whose run ended above its cost cap or its token cap, or one the cost
// bound cut short. The answer's text is kept either way.
func (r *run) overCapAtEnd(p *callPlan, resp *llm.Response) error {
	capCents := r.a.cfg.Limits.MaxCostCents
	if capCents > 0 && r.cost > capCents {
		return fmt.Errorf("%w: the final answer brought the run to %.4f¢ of its %.2f¢ cap (kept)", ErrCostExceeded, r.cost, capCents)
	}
	// A shared budget (a group's, the session's) holds to the last cent
	// too: an answer that cost more than it was granted (the input
	// estimate fell short) crossed it.
	if p.shared && p.cost > p.granted+1e-9 {
		return fmt.Errorf("%w: the final answer cost %.4f¢, more than the %.4f¢ the shared budget had left for it (kept)", ErrCostExceeded, p.cost, p.granted)
	}
	if p.costCut && resp.StopReason == llm.StopMaxTokens {
		return fmt.Errorf("%w: the answer was cut at %d output tokens, all that the cost cap or shared budget left room for (kept)",
			ErrCostExceeded, resp.Usage.OutputTokens)
	}
	// The token cap holds to the last token too (seed 001 §2.4): an
	// answer whose input or output crosses it is kept, never success.
	if capTokens := r.a.cfg.Limits.MaxTokens; capTokens > 0 && r.usage.Total() > capTokens {
		return fmt.Errorf("%w: the final answer brought the run to %d of its %d tokens (kept)", ErrTokensExceeded, r.usage.Total(), capTokens)
	}
	return nil
}

package subagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// Two-phase spawn (seed 000 section 2). When the confirmation policy
// (Options.Confirm) asks for it, a spawn from the orchestrator's tools,
// `ava spawn` or the API does not start: it becomes a Proposal with a
// pending ID (P-xxxxxx) and an estimate, stored in the store and
// announced by a SpawnProposed event in the parent session's stream.
// Only the person decides it, through Decide or Answer (the API and the
// channels); no tool does, so the model cannot confirm its own proposal.
// A confirmed proposal starts as a background spawn whose result reaches
// the parent as a [Subagent] message; a rejected or expired one is told
// to the parent the same way, exactly once.

// Errors of the confirmation flow.
var (
	// ErrDecided means the proposal was already confirmed or rejected,
	// or is being decided right now (HTTP 409).
	ErrDecided = errors.New("proposal already decided")
	// ErrUnclear means a free-text answer was neither a yes, a no nor a
	// change that could be applied: the person is asked again (HTTP 422).
	ErrUnclear = errors.New(confirm.AskAgain)
	// ErrBadDecision means a decision other than yes, no or modify, or a
	// modify with nothing to change (HTTP 400).
	ErrBadDecision = errors.New("bad decision")
)

// DefaultConfirmTimeout is how long a proposal waits for the person.
const DefaultConfirmTimeout = 10 * time.Minute

// NoParentSession is the session key a proposal without a parent session
// (a parentless POST /api/subagents) is filed under; no event is
// published for it.
const NoParentSession = "ava:api:spawns"

// ProposedSpawn is what a proposal starts once confirmed: one config
// (mode single) or a group's.
type ProposedSpawn struct {
	Configs        []Config `json:"configs"`
	Mode           Mode     `json:"mode"`
	BudgetCents    float64  `json:"budgetCents,omitempty"`
	TimeoutSeconds float64  `json:"timeoutSeconds,omitempty"`
	// Parent is the parent session ("" for none), ParentAgent its agent.
	Parent      string        `json:"parent,omitempty"`
	ParentAgent string        `json:"parentAgent,omitempty"`
	Workspace   string        `json:"workspace,omitempty"`
	User        string        `json:"user,omitempty"`
	Fork        []llm.Message `json:"fork,omitempty"`
	// OperatorModels records, per config, that the operator named its
	// model (Config.ModelBy, which a config's JSON never carries, so that
	// a model's arguments cannot claim it): a proposal stored by one
	// process and confirmed in another keeps who named the model.
	OperatorModels []bool `json:"operatorModels,omitempty"`
	// Idempotency is the spawn request's idempotency key, recorded with
	// the proposal (never part of its JSON).
	Idempotency *store.Idempotency `json:"-"`
	// Process, set for a proposal of kind process, is the orchestrator's
	// tool call it runs (process.go); Configs is then empty.
	Process *ProposedProcess `json:"process,omitempty"`
}

// withNamers returns ps recording who named each config's model.
func (ps ProposedSpawn) withNamers() ProposedSpawn {
	ps.OperatorModels = make([]bool, len(ps.Configs))
	for i, c := range ps.Configs {
		ps.OperatorModels[i] = c.ModelBy == llm.NamedByOperator
	}
	return ps
}

// configs are the configs to start, each with who named its model.
func (ps ProposedSpawn) configs() []Config {
	cfgs := slices.Clone(ps.Configs)
	for i := range cfgs {
		if i < len(ps.OperatorModels) && ps.OperatorModels[i] {
			cfgs[i].ModelBy = llm.NamedByOperator
		}
	}
	return cfgs
}

func (ps ProposedSpawn) caller() tool.Caller {
	return tool.Caller{AgentID: ps.ParentAgent, SessionKey: ps.Parent, Workspace: ps.Workspace, User: ps.User}
}

// apply makes a person's change: the model for every member; a group's
// cost and time go to its budget and combined timeout, a single spawn's
// to its caps.
func (ps *ProposedSpawn) apply(c confirm.Change) {
	cfgs := slices.Clone(ps.Configs)
	ps.OperatorModels = slices.Clone(ps.OperatorModels)
	for i := range cfgs {
		if c.Model != "" {
			// A decision comes through the API or a chat: not the operator.
			cfgs[i].Model, cfgs[i].ModelBy = c.Model, llm.NamedByOther
			if i < len(ps.OperatorModels) {
				ps.OperatorModels[i] = false
			}
		}
		if c.MaxTokens > 0 {
			cfgs[i].MaxTokens = c.MaxTokens
		}
		if c.MaxIterations > 0 {
			cfgs[i].MaxIterations = c.MaxIterations
		}
		if ps.Mode == ModeSingle && c.MaxCostCents > 0 {
			cfgs[i].MaxCostCents = c.MaxCostCents
		}
		if ps.Mode == ModeSingle && c.TimeoutSeconds > 0 {
			cfgs[i].Timeout = c.TimeoutSeconds
		}
	}
	ps.Configs = cfgs
	if ps.Mode != ModeSingle && c.MaxCostCents > 0 {
		ps.BudgetCents = c.MaxCostCents
	}
	if ps.Mode != ModeSingle && c.TimeoutSeconds > 0 {
		ps.TimeoutSeconds = c.TimeoutSeconds
	}
}

// Proposal is a spawn awaiting (or past) the person's decision.
type Proposal struct {
	ID string `json:"id"`
	// Kind is spawn (subagents) or process (a long run_bash or
	// python_exec call of the orchestrator's, Spawn.Process).
	Kind       string            `json:"kind"`
	SessionKey string            `json:"sessionKey"`
	Status     string            `json:"status"`
	Mode       Mode              `json:"mode"`
	Role       string            `json:"role"`
	Task       string            `json:"task"`
	Tasks      []string          `json:"tasks,omitempty"`
	Spawn      ProposedSpawn     `json:"spawn"`
	Estimate   estimate.Estimate `json:"estimate"`
	Rationale  string            `json:"rationale,omitempty"`
	CreatedAt  time.Time         `json:"createdAt"`
	ExpiresAt  time.Time         `json:"expiresAt"`
	// Text is the proposal as shown to the person (seed 000 section 2.1).
	Text string `json:"text"`
}

// Decided is a decided proposal and what it started.
type Decided struct {
	Proposal Proposal `json:"proposal"`
	// Decision is confirmed or rejected (a modify is confirmed with
	// Change set).
	Decision string `json:"decision"`
	Change   string `json:"change,omitempty"`
	// SubagentIDs are the runs a confirmation started; GroupID is set
	// for a group.
	SubagentIDs []string `json:"subagentIds,omitempty"`
	GroupID     string   `json:"groupId,omitempty"`
}

// record is a pending spawn's stored config: the spawn and its estimate.
type record struct {
	Spawn    ProposedSpawn     `json:"spawn"`
	Estimate estimate.Estimate `json:"estimate"`
}

// SpawnOrPropose starts req, or, when the confirmation policy asks for
// it, stores it as a proposal instead: exactly one of the handle and the
// proposal is returned on success.
func (m *Manager) SpawnOrPropose(ctx context.Context, req Request, rationale string) (*Handle, *Proposal, error) {
	ps := ProposedSpawn{Configs: []Config{req.Config}, Mode: ModeSingle, Fork: req.Fork, Idempotency: req.Idempotency}
	p, err := m.props.gate(ctx, ps, req.Parent, req.User, rationale)
	if err != nil || p != nil {
		return nil, p, err
	}
	h, err := m.Spawn(ctx, req)
	return h, nil, err
}

// SpawnGroupOrPropose is SpawnOrPropose for a group, proposed as one
// with the group's total estimate.
func (m *Manager) SpawnGroupOrPropose(ctx context.Context, req GroupRequest, rationale string) (*Group, *Proposal, error) {
	ps := ProposedSpawn{Configs: req.Configs, Mode: req.Mode, BudgetCents: req.BudgetCents,
		TimeoutSeconds: req.Timeout.Seconds(), Fork: req.Fork}
	if n := len(req.Configs); n == 0 || n > MaxGroupSize || req.Mode != ModeParallel && req.Mode != ModeChain ||
		req.BudgetCents < 0 || req.Timeout < 0 {
		g, err := m.SpawnGroup(ctx, req) // refuses it with the reason
		return g, nil, err
	}
	p, err := m.props.gate(ctx, ps, req.Parent, req.User, rationale)
	if err != nil || p != nil {
		return nil, p, err
	}
	g, err := m.SpawnGroup(ctx, req)
	return g, nil, err
}

// gate returns a stored proposal when the policy asks for one, or nil
// when the spawn may start now.
func (pp *proposals) gate(ctx context.Context, ps ProposedSpawn, parent tool.Caller, user, rationale string) (*Proposal, error) {
	rule := pp.rule()
	if rule.policy.Ask == confirm.Never {
		return nil, nil
	}
	if parent.Subagent {
		return nil, fmt.Errorf("spawn: %w: subagents cannot spawn subagents", tool.ErrForbidden)
	}
	ps.Parent, ps.ParentAgent, ps.Workspace, ps.User = parent.SessionKey, parent.AgentID, parent.Workspace, user
	ps = ps.withNamers()
	est, err := pp.rt.estimateSpawn(ctx, ps)
	if err != nil {
		return nil, err
	}
	if !rule.policy.Asks(est.MaxCostCents) {
		return nil, nil
	}
	p, err := pp.propose(ctx, ps, est, rationale)
	if err != nil {
		return nil, err
	}
	if sc := trace.SpanContextFromContext(ctx); pp.traced && sc.IsValid() {
		pp.spans.Store(p.ID, sc)
	}
	return &p, nil
}

// takeSpan returns and forgets the span of the call that made
// proposal id (invalid when unknown).
func (pp *proposals) takeSpan(id string) trace.SpanContext {
	if v, ok := pp.spans.LoadAndDelete(id); ok {
		return v.(trace.SpanContext)
	}
	return trace.SpanContext{}
}

// estimateSpawn checks every member as a spawn would and returns the
// total estimate.
func (m *Manager) estimateSpawn(ctx context.Context, ps ProposedSpawn) (estimate.Estimate, error) {
	var ests []estimate.Estimate
	for _, c := range ps.configs() {
		p, err := m.plan(ctx, Request{Config: c, Parent: ps.caller(), User: ps.User})
		if err != nil {
			return estimate.Estimate{}, err
		}
		e, err := m.estimate(ctx, p)
		if err != nil {
			return estimate.Estimate{}, err
		}
		ests = append(ests, e)
	}
	return estimate.Combine(ests, estimate.Group{Single: ps.Mode == ModeSingle, Chain: ps.Mode == ModeChain, Slots: m.limits().maxConcurrent,
		TimeoutSeconds: ps.TimeoutSeconds, BudgetCents: ps.BudgetCents}), nil
}

// propose stores the proposal under a fresh pending ID and publishes its
// SpawnProposed event.
func (pp *proposals) propose(ctx context.Context, ps ProposedSpawn, est estimate.Estimate, rationale string) (Proposal, error) {
	cfg, err := json.Marshal(record{Spawn: ps, Estimate: est})
	if err != nil {
		return Proposal{}, fmt.Errorf("propose spawn: %w", err)
	}
	now := pp.now().UTC()
	sp := store.PendingSpawn{SessionKey: orElse(ps.Parent, NoParentSession), Config: cfg,
		EstimateMinSeconds: est.MinSeconds, EstimateMaxSeconds: est.MaxSeconds, MaxCostCents: est.MaxCostCents,
		Tools: est.Tools, Rationale: rationale, Status: store.SpawnPending, CreatedAt: now, ExpiresAt: now.Add(pp.rule().timeout),
		Idempotency: ps.Idempotency}
	for try := 0; ; try++ {
		if sp.ID, err = newPendingID(pp.rand); err != nil {
			return Proposal{}, err
		}
		err = pp.store.CreatePending(ctx, sp)
		if err == nil || !errors.Is(err, store.ErrDuplicate) || try == 4 {
			break
		}
	}
	if err != nil {
		return Proposal{}, fmt.Errorf("propose spawn: %w", err)
	}
	p, err := proposalOf(sp)
	if err != nil {
		return Proposal{}, err
	}
	pp.publishProposed(p)
	pp.noticeProposed(p)
	return p, nil
}

// orElse is s, or fallback when s is empty.
func orElse(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// newPendingID draws "P-" and six hex characters from r (crypto/rand
// when nil).
func newPendingID(r io.Reader) (string, error) { return drawID(r, "P-", "a pending spawn ID") }

// drawID draws prefix and six hex characters from r (crypto/rand when
// nil); what names the ID in an error.
func drawID(r io.Reader, prefix, what string) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [3]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("draw %s: %w", what, err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

// proposalOf rebuilds a proposal from its stored record.
func proposalOf(sp store.PendingSpawn) (Proposal, error) {
	var rec record
	if err := json.Unmarshal(sp.Config, &rec); err != nil {
		return Proposal{}, fmt.Errorf("pending spawn %s: stored config: %w", sp.ID, err)
	}
	p := Proposal{ID: sp.ID, Kind: KindSpawn, SessionKey: sp.SessionKey, Status: sp.Status, Mode: rec.Spawn.Mode, Spawn: rec.Spawn,
		Estimate: rec.Estimate, Rationale: sp.Rationale, CreatedAt: sp.CreatedAt, ExpiresAt: sp.ExpiresAt}
	if pr := rec.Spawn.Process; pr != nil {
		p.Kind, p.Role, p.Task = KindProcess, pr.Tool, pr.Command
		p.Text = FormatProcessProposal(p)
		return p, nil
	}
	var roles []string
	for _, c := range rec.Spawn.Configs {
		if !slices.Contains(roles, c.Role) {
			roles = append(roles, c.Role)
		}
		p.Tasks = append(p.Tasks, c.Task)
	}
	p.Role, p.Task = strings.Join(roles, ", "), strings.Join(p.Tasks, "; ")
	if p.Mode == ModeSingle {
		p.Tasks = nil
	}
	p.Text = FormatProposal(p)
	return p, nil
}

// list returns the proposals awaiting a decision, oldest first: the
// session's, or every session's when session is "".
func (pp *proposals) list(ctx context.Context, session string) ([]Proposal, error) {
	sps, err := pp.store.ListPending(ctx, session)
	if err != nil {
		return nil, err
	}
	out := make([]Proposal, 0, len(sps))
	for _, sp := range sps {
		p, err := proposalOf(sp)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// get returns one proposal, whatever its status, or an error wrapping
// store.ErrNotFound.
func (pp *proposals) get(ctx context.Context, id string) (Proposal, error) {
	sp, err := pp.store.GetPending(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	return proposalOf(sp)
}

// publishProposed publishes p's SpawnProposed event in its parent
// session.
func (pp *proposals) publishProposed(p Proposal) {
	if p.Spawn.Parent == "" {
		return
	}
	ev := event.New(event.SpawnProposed, event.SpawnProposedContent{PendingID: p.ID, Kind: p.Kind, Role: p.Role, Task: p.Task,
		Mode: string(p.Mode), Tasks: p.Tasks, Estimate: p.Estimate, Rationale: p.Rationale, ExpiresAt: p.ExpiresAt, Text: p.Text})
	pp.publishTo(p.Spawn, ev)
}

// publishTo publishes ev in the proposal's parent session as its agent.
func (pp *proposals) publishTo(ps ProposedSpawn, ev event.Event) {
	if ps.Parent == "" {
		return
	}
	ev.Session, ev.Agent, ev.User, ev.Time = ps.Parent, orElse(ps.ParentAgent, event.OrchestratorID), ps.User, pp.now()
	if _, err := pp.hub.Publish(ev); err != nil {
		pp.log.Error("publish to parent session", "session", ps.Parent, "type", ev.Type, "err", err)
	}
}

package ava

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// Status is a run's status (package lifecycle: queued, running, and the
// final ones).
type Status = lifecycle.Status

// SubagentConfig is what a spawn asks for: role, task, context, model,
// limits (zero: the role's), extended thinking and context mode.
type SubagentConfig = subagent.Config

// Result is a finished subagent's structured result.
type Result = subagent.Result

// GroupRequest is a parallel or chain spawn of several subagents: set
// Configs, Mode ("parallel" or "chain"), and optionally BudgetCents,
// Timeout and Background. SpawnGroup sets Parent and User from its own
// arguments, refuses Fork (only the orchestrator's tool has a
// conversation to fork) and leaves TraceParent to the context's span.
type GroupRequest = subagent.GroupRequest

// Figures are what a run used and how long it took, over all its turns:
// iterations, tokens, cost, active time (Elapsed) and wall time (Wall),
// from the one read model (package observe holds the one definition,
// which the notices carry too).
type Figures = observe.Figures

// Subagent is one run as every surface shows it: its identity, status,
// figures and, once it ended, its result. Its free text (task, activity,
// result, error) is masked.
type Subagent struct {
	ID         string `json:"id"`
	SessionKey string `json:"sessionKey"`
	Role       string `json:"role"`
	Task       string `json:"task"`
	Model      string `json:"model"`
	Mode       string `json:"mode,omitempty"`
	Parent     string `json:"parent,omitempty"`
	GroupID    string `json:"groupId,omitempty"`
	Status     Status `json:"status"`
	// QueuePosition is a queued run's place in line for a slot (1: next);
	// 0 when it is not queued in this process.
	QueuePosition int `json:"queuePosition,omitempty"`
	// Stalled is set when it made no progress for the stall threshold.
	Stalled bool `json:"stalled,omitempty"`
	// WaitingForUser is set while it waits for the person's answer to
	// its question.
	WaitingForUser bool `json:"waitingForUser,omitempty"`
	Figures
	// Activity is what it does now; LastTool the last tool it called.
	Activity  string    `json:"activity,omitempty"`
	LastTool  string    `json:"lastTool,omitempty"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Result is its structured result once it ended (nil before).
	Result *Result `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
	// Attempts counts the times another process resumed it.
	Attempts int `json:"attempts,omitempty"`
	// Live is set when this process runs or holds it.
	Live bool `json:"live"`
	// Waits are the times it waited for the person (ask_user), the open
	// one last: a timeline marks them on its bar. Kept with its result,
	// so they outlive the process that ran it; a run another process of
	// a cluster runs shows them once it ends.
	Waits []Wait `json:"waits,omitempty"`
}

// Wait is a time a subagent waited for the person: one ask_user
// question, from when it was asked to when it was answered or closed
// (AnsweredAt zero while it waits), and who ended it (By).
type Wait = subagent.Wait

// SubagentFilter selects subagents for Subagents.
type SubagentFilter struct {
	// Parent keeps the runs spawned from this main session ("" : all).
	Parent string
	// Status keeps these statuses (none: all).
	Status []Status
	// Limit bounds how many stored runs are read, newest first
	// (default DefaultSubagentLimit, at most MaxSubagentLimit).
	Limit int
}

// DefaultSubagentLimit is how many runs Subagents returns by default.
const DefaultSubagentLimit = subagent.DefaultListLimit

// MaxSubagentLimit is the most runs Subagents returns.
const MaxSubagentLimit = subagent.MaxListLimit

// Subagents returns the runs the filter keeps, newest first: the ones
// this process holds with their live state, the others as stored (in a
// cluster, every process's). A limit above MaxSubagentLimit is
// ErrInvalid.
func (r *Runtime) Subagents(ctx context.Context, f SubagentFilter) ([]Subagent, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultSubagentLimit
	}
	if f.Limit > MaxSubagentLimit {
		return nil, invalidf("limit %d: at most %d", f.Limit, MaxSubagentLimit)
	}
	list, err := r.in.Subagent.Runs(ctx, subagent.RunFilter{Session: f.Parent, Status: f.Status, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]Subagent, len(list))
	for i, st := range list {
		out[i] = fromStatus(st)
	}
	return out, nil
}

// Subagent returns one run by its ID or a unique prefix: live when this
// process holds it, else as stored. An empty or ambiguous ID is
// ErrInvalid, an unknown one ErrNotFound.
func (r *Runtime) Subagent(ctx context.Context, id string) (Subagent, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return Subagent{}, invalidf("subagent ID: empty")
	}
	st, err := r.in.Subagent.Run(ctx, id)
	if err != nil {
		return Subagent{}, err
	}
	return fromStatus(st), nil
}

// Wait waits until the subagent id ends and returns it, or ctx's error.
// A run another process holds is looked at every second. Its other
// errors are Subagent's.
func (r *Runtime) Wait(ctx context.Context, id string) (Subagent, error) {
	if h, err := r.in.Subagent.Get(id); err == nil {
		if _, err := h.Wait(ctx); err != nil && ctx.Err() != nil {
			return Subagent{}, ctx.Err()
		}
		return r.Subagent(ctx, h.ID())
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		sa, err := r.Subagent(ctx, id)
		if err != nil || sa.Status.Final() {
			return sa, err
		}
		select {
		case <-ctx.Done():
			return Subagent{}, ctx.Err()
		case <-t.C:
		}
	}
}

// Cancel stops a running or queued subagent this process holds; its
// status becomes cancelled; one that had ended is returned as it is. A
// run another process holds is ErrBusy, an unknown one ErrNotFound.
func (r *Runtime) Cancel(ctx context.Context, id string) (Subagent, error) {
	h, err := r.in.Subagent.Cancel(id)
	if errors.Is(err, store.ErrNotFound) {
		return r.elsewhere(ctx, "cancel", id)
	}
	if err != nil {
		return Subagent{}, err
	}
	return r.Subagent(ctx, h.ID())
}

// elsewhere is subagent id when this process does not hold it: it ended
// (returned as it is), or another process runs it, which only that
// process can stop (ErrBusy, naming what did it).
func (r *Runtime) elsewhere(ctx context.Context, what, id string) (Subagent, error) {
	sa, err := r.Subagent(ctx, id)
	if err != nil {
		return Subagent{}, err
	}
	if !sa.Status.Final() {
		return sa, fmt.Errorf("%s %s: %w: it is %s in another process", what, sa.ID, ErrBusy, sa.Status)
	}
	return sa, nil
}

// SpawnRequest is one subagent the person (or a program) asks for.
type SpawnRequest struct {
	// Parent is the main session the subagent works for; its result is
	// delivered there. "" spawns it on its own.
	Parent string
	Config SubagentConfig
	// User is the person it works for, when known.
	User string
	// Rationale is shown to the person when the spawn needs their
	// confirmation.
	Rationale string
	// Background announces the result into the parent's history when it
	// ends, rather than to a caller that waits for it (Wait).
	Background bool
	// IdempotencyKey, when set, makes a repeat of this request (the
	// same key and the same request, within IdempotencyTTL) answer with
	// what the first one made instead of spawning again: the key is
	// recorded in the same transaction as the run or the proposal. The
	// same key with a different request is ErrKeyReused. See
	// docs/api.md, "Idempotency-Key".
	IdempotencyKey string
}

// IdempotencyTTL is how long an idempotency key is kept.
const IdempotencyTTL = store.IdempotencyTTL

// ErrKeyReused: an idempotency key came again with a different request
// (KindOf: Conflict). Nothing was done.
// It is the sessions' sentinel too: one error for a reused key, whether
// the request was a spawn or a message.
var ErrKeyReused = session.ErrKeyReused

// Spawned is what a spawn did: it started a subagent, or (when the
// confirmation policy asks for it) made a proposal the person decides
// (Decide). Exactly one is set.
type Spawned struct {
	Subagent *Subagent
	Proposal *Proposal
	// Replayed marks the answer to a repeated request (its idempotency
	// key was recorded): the subagent or proposal the first request
	// made, as it is now; nothing was spawned again.
	Replayed bool
}

// Spawn starts a subagent, or proposes it when the confirmation policy
// asks for the person's yes. The hierarchy rule holds here for every
// surface: a subagent's session cannot be a parent (ErrForbidden). It
// fails with ErrReadOnly, ErrInvalid (CheckSpawn, an unknown role),
// ErrNoModel (no provider and no model), ErrNotFound (no such parent),
// ErrForbidden, ErrLimit (every slot taken) or ErrBudget (the parent's
// budget is spent).
func (r *Runtime) Spawn(ctx context.Context, req SpawnRequest) (Spawned, error) {
	if err := r.writable(); err != nil {
		return Spawned{}, err
	}
	if err := CheckSpawn(req.Config); err != nil {
		return Spawned{}, err
	}
	if err := r.modelReady(req.Config); err != nil {
		return Spawned{}, err
	}
	idem, err := spawnKey(req)
	if err != nil {
		return Spawned{}, err
	}
	if idem != nil {
		if got, found, err := r.replaySpawn(ctx, *idem); found {
			return got, err
		}
	}
	caller, err := r.caller(ctx, req.Parent, req.User)
	if err != nil {
		return Spawned{}, err
	}
	// The spawn's records are written under ctx: a caller that gave up
	// before they were committed (a request's deadline, a client gone)
	// leaves nothing behind; the run itself does not depend on ctx.
	h, p, err := r.in.Subagent.SpawnOrPropose(ctx,
		subagent.Request{Config: req.Config, Parent: caller, User: req.User, Background: req.Background, Idempotency: idem}, req.Rationale)
	if idem != nil && errors.Is(err, store.ErrKeyUsed) {
		// A concurrent request with the key won: its result is ours.
		if got, found, err := r.replaySpawn(ctx, *idem); found {
			return got, err
		}
	}
	if err != nil {
		return Spawned{}, fmt.Errorf("spawn %s: %w", req.Config.Role, err)
	}
	if p != nil {
		mp := r.maskProposal(*p)
		return Spawned{Proposal: &mp}, nil
	}
	sa, err := r.Subagent(ctx, h.ID())
	if err != nil {
		return Spawned{}, err
	}
	return Spawned{Subagent: &sa}, nil
}

// CheckSpawn refuses what Spawn would refuse in a spawn's configuration,
// before anything is asked or started: a malformed one, and context_mode
// fork, since a spawn through the runtime has no conversation to fork
// (only the orchestrator's own spawn tool starts a subagent from its
// conversation). The error is ErrInvalid.
func CheckSpawn(c SubagentConfig) error {
	if err := c.Validate(); err != nil {
		return invalidf("%v", err)
	}
	if c.ContextMode == subagent.ContextFork {
		return invalidf("context_mode fork: a spawn from outside a conversation has none to fork; use fresh (the default) and give the subagent what it needs in context")
	}
	return nil
}

// caller is the orchestrator of the main session parent as a spawn's
// caller: a subagent's session cannot be one.
func (r *Runtime) caller(ctx context.Context, parent, user string) (tool.Caller, error) {
	if parent != "" {
		ref, err := r.Resolve(ctx, parent)
		if err != nil {
			return tool.Caller{}, err
		}
		if ref.SubagentID != "" {
			return tool.Caller{}, fmt.Errorf("parent %s: %w: subagents cannot spawn subagents", parent, ErrForbidden)
		}
		parent = ref.Key
	}
	return tool.Caller{AgentID: event.OrchestratorID, SessionKey: parent, User: user, Workspace: r.in.Config.Workspace}, nil
}

// FollowUp sends a message to a subagent (ID or unique prefix) and
// returns the subagent rather than a turn: it is Send to its session key
// ava:subagent:<id> (one path), for a caller that then follows the run.
// Into its conversation before its next model call when it runs and
// steer is set, else as a new turn once it is idle (queued behind a
// running turn when queue is set). It fails with Send's errors: ErrBusy
// when it runs and neither queue nor steer is set, or another process
// runs it; ErrNotFound for no such subagent.
func (r *Runtime) FollowUp(ctx context.Context, id, message string, queue, steer bool) (Subagent, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return Subagent{}, invalidf("subagent ID: empty")
	}
	if _, err := r.Send(ctx, store.SubagentSessionPrefix+id, message, SendOptions{Queue: queue, Steer: steer}); err != nil {
		return Subagent{}, err
	}
	return r.Subagent(ctx, id)
}

// fromStatus is a run's view from the one read model of its figures
// (subagent.Manager.Runs and Run), live or stored alike, masked there.
func fromStatus(st subagent.RunStatus) Subagent {
	out := Subagent{ID: st.ID, SessionKey: store.SubagentSessionPrefix + st.ID, Role: st.Role, Task: st.Task, Model: st.Model,
		Mode: string(st.Mode), Parent: st.Parent, GroupID: st.GroupID, Status: st.Status, QueuePosition: st.QueuePosition,
		Stalled: st.Stalled, WaitingForUser: st.WaitingForUser,
		Figures:  Figures{Iterations: st.Iteration, Tokens: st.Tokens, CostCents: st.CostCents, Elapsed: st.Elapsed, Wall: st.Wall},
		Activity: st.Activity, LastTool: st.LastTool, CreatedAt: st.CreatedAt, StartedAt: st.StartedAt, EndedAt: st.EndedAt,
		Error: st.Error, Attempts: st.Attempts, Live: st.Live, Waits: st.Waits}
	if len(st.Result) > 0 {
		var res Result
		if err := json.Unmarshal(st.Result, &res); err == nil {
			out.Result = &res
		}
	}
	return out
}

// SpawnArgs are the arguments of the spawn tool (spawn_subagent) on every
// surface that offers one — the orchestrator's tool and the MCP server's
// — with one JSON schema (inferred from its tags): a field added once
// appears on both. Config converts them.
type SpawnArgs = subagent.SpawnArgs

// GroupArgs are the arguments of the group spawn tool (spawn_subagents),
// one definition as SpawnArgs; Request converts them.
type GroupArgs = subagent.GroupArgs

// SubagentIDArgs name one subagent (subagent_status, cancel_subagent).
type SubagentIDArgs = subagent.IDArgs

// ListSubagentsArgs are list_subagents' arguments.
type ListSubagentsArgs = subagent.ListArgs

// The context modes of SubagentConfig.ContextMode.
const (
	// ContextFresh starts a subagent from its task and context only.
	ContextFresh = subagent.ContextFresh
	// ContextFork starts it from the calling orchestrator's conversation:
	// only the orchestrator's own spawn tool has one to give.
	ContextFork = subagent.ContextFork
)

// String is the subagent in one plain line, with the figures every
// surface shows (Elapsed is the active time):
// "S-7f3a2b researcher running 12s, 2034 tokens, 0.30¢: calling the model"
// (the cost as internal/money writes it).
func (s Subagent) String() string {
	status := string(s.Status)
	switch {
	case s.WaitingForUser:
		status += " (waiting for the person's answer)"
	case s.Stalled:
		status += " (stalled)"
	case s.QueuePosition > 0:
		status += fmt.Sprintf(" (#%d in line for a slot)", s.QueuePosition)
	}
	line := fmt.Sprintf("%s %s %s %s, %d tokens, %s", s.ID, s.Role, status, s.Elapsed.Round(time.Second), s.Tokens, money.Spend(s.CostCents, s.Tokens, false))
	if s.Activity != "" && !s.Status.Final() {
		line += ": " + s.Activity
	}
	return line
}

// spawnKey is a spawn request's idempotency key as the store records it
// (nil without one): the key, and a hash of the request's content.
func spawnKey(req SpawnRequest) (*store.Idempotency, error) {
	if req.IdempotencyKey == "" {
		return nil, nil
	}
	if err := CheckIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	content := req
	content.IdempotencyKey = ""
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("spawn: hash the request: %w", err)
	}
	sum := sha256.Sum256(b)
	return &store.Idempotency{Scope: store.IdempotencySpawn, Key: req.IdempotencyKey, RequestHash: hex.EncodeToString(sum[:])}, nil
}

// CheckIdempotencyKey refuses an idempotency key that is empty, longer
// than 255 bytes or not printable ASCII (ErrInvalid).
func CheckIdempotencyKey(key string) error {
	if key == "" || len(key) > store.MaxIdempotencyKey {
		return invalidf("idempotency key: %d bytes, want 1 to %d", len(key), store.MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return invalidf("idempotency key: byte %d is not printable ASCII", i)
		}
	}
	return nil
}

// replaySpawn answers a spawn whose key was recorded already with what
// the first request made, and reports whether the key was recorded. A
// key recorded for a different request is ErrKeyReused.
func (r *Runtime) replaySpawn(ctx context.Context, k store.Idempotency) (Spawned, bool, error) {
	got, err := r.in.Store.GetIdempotency(ctx, k.Scope, k.Key)
	if errors.Is(err, store.ErrNotFound) {
		return Spawned{}, false, nil
	}
	if err != nil {
		return Spawned{}, true, fmt.Errorf("spawn: look up the idempotency key: %w", err)
	}
	if got.RequestHash != k.RequestHash {
		return Spawned{}, true, fmt.Errorf("idempotency key %q (first used %s for %s): %w", k.Key,
			got.CreatedAt.Format(time.RFC3339), got.Result, ErrKeyReused)
	}
	if strings.HasPrefix(got.Result, "P-") {
		p, err := r.Proposal(ctx, got.Result)
		if err != nil {
			return Spawned{}, true, err
		}
		return Spawned{Proposal: &p, Replayed: true}, true, nil
	}
	sa, err := r.Subagent(ctx, got.Result)
	if err != nil {
		return Spawned{}, true, err
	}
	return Spawned{Subagent: &sa, Replayed: true}, true, nil
}

// Package orchestrator runs Ava's main sessions: the agent a person talks
// to, which answers directly or hands work to subagents. A session has a
// key ("ava:cli:…", "ava:web:…", "ava:telegram:…"), a history kept in the
// store, and the orchestrator's tools.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/budget"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tracing"
)

// History keeps a session's conversation. Nil keeps none: each message
// starts afresh.
type History interface {
	// Load returns the session's messages, oldest first.
	Load(ctx context.Context, session string) ([]llm.Message, error)
	// Save appends messages to the session.
	Save(ctx context.Context, session string, msgs []llm.Message) error
	// SaveKeyed is Save of a person's message sent with an idempotency
	// key (key, when not nil): the key is recorded in the same
	// transaction as the messages, and a key recorded already stores
	// nothing and fails with an error wrapping store.ErrKeyUsed.
	SaveKeyed(ctx context.Context, session string, msgs []llm.Message, key *store.Idempotency) error
}

// Sessions keeps sessions' budgets and spend (store.Store has it).
type Sessions interface {
	GetSession(ctx context.Context, key string) (store.Session, error)
	AddSessionSpend(ctx context.Context, key string, s store.Spend) error
	SessionSpend(ctx context.Context, key string) (event.Spend, error)
}

// Config is what the orchestrator needs.
type Config struct {
	Model llm.Model
	Tools *tool.Registry
	// Hub receives the session's events and numbers them.
	Hub     *event.Hub
	History History
	// Sessions, when set, holds the session's budget and spend.
	Sessions Sessions
	// Ledger is the live spend of the sessions' turns and subagents,
	// which the turn's model calls reserve from when its session has a
	// budget: the one the subagent manager uses, so that both see each
	// other's spend (see package budget). Nil with Sessions: one over
	// Sessions, which sees this orchestrator's turns only.
	Ledger    *budget.Ledger
	Limits    agent.Limits
	Workspace string
	// Offline marks the model as the offline scripted one.
	Offline bool
	Logger  *slog.Logger
	Clock   func() time.Time
	// Tracer records each turn as an OpenTelemetry trace (an
	// invoke_agent span named for AgentName, with its model and tool
	// calls and the subagents they spawn); nil traces nothing.
	Tracer *tracing.Tracer
	// Events is the durable record of the sessions' events (the store),
	// read to find a turn that never ended (its process was killed);
	// nil finds none.
	Events event.Log
	// Owner is this process's instance: its ID is recorded in each
	// turn's SessionStart, and it tells whether another turn's instance
	// is gone. Nil: a turn that never ended is taken as gone when it
	// started before this process did.
	Owner Owner
	// Images reads the images people attach, which a model that takes
	// images (Model.Images) is given as image blocks; nil gives none.
	Images ImageSource
}

// Owner is this process's instance (instance.Instance has it).
type Owner interface {
	// ID is the instance's current ID.
	ID() string
	// Gone returns which of owners are gone.
	Gone(ctx context.Context, owners []string) ([]store.Instance, error)
}

// AgentName is the orchestrator's name in its spans (gen_ai.agent.name);
// its ID is event.OrchestratorID.
const AgentName = "orchestrator"

// Orchestrator answers messages in main sessions.
type Orchestrator struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
}

// New returns an orchestrator.
func New(cfg Config) *Orchestrator {
	if cfg.Hub == nil {
		cfg.Hub = event.NewHub(nil)
	}
	if cfg.Ledger == nil && cfg.Sessions != nil {
		cfg.Ledger = budget.NewLedger(cfg.Sessions)
	}
	o := &Orchestrator{cfg: cfg, log: cfg.Logger, now: cfg.Clock}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Ask runs one turn of the session: the message, the model and tools
// until an answer or a limit. The result's Err is also returned when the
// history could not be loaded or saved.
func (o *Orchestrator) Ask(ctx context.Context, session, user, message string) (agent.Result, error) {
	res, _, err := o.AskMessage(ctx, session, user, Message{Text: message})
	return res, err
}

// Message is the person's message a turn answers.
type Message struct {
	// Text is what the model answers: for a turn merged from others,
	// their messages and the new one joined by a blank line.
	Text string
	// Stored are the leading parts of Text the history already holds, in
	// order: each stored by a turn merged into this one (session.Service
	// keeps them). They are taken out of the loaded history, so that the
	// prompt holds Text once, and only the rest of Text is stored.
	Stored []string
	// New says the session was created for this message a moment ago
	// (session.Service knows): it has no history and no unended turn,
	// so AskMessage reads neither.
	New bool
	// Report marks a turn Ava starts by itself, with no message of the
	// person's, to report the background results at the end of the
	// history (see ReportInstruction): Text is ignored and nothing is
	// stored before the turn's own messages.
	Report bool
	// Idempotency, when set, is the idempotency key of the request that
	// sent the message (POST /api/chat): it is recorded in the
	// transaction that stores the message (History.SaveKeyed). When the
	// key is recorded already (another process took the same request),
	// nothing is stored and the turn ends at once with an error wrapping
	// store.ErrKeyUsed, without asking the model.
	Idempotency *store.Idempotency
}

// ReportInstruction is what a report turn gives the model in place of a
// person's message. It is not stored: the history keeps the results and
// the report.
const ReportInstruction = "[Ava] Every background subagent started in this session has now ended; their results are the [Subagent] messages above. " +
	"Report to the person now, in one message: what they found, synthesised, and what failed and why. " +
	"Do not start new work unless the person asked for something still undone."

// AskMessage is Ask for a Message; it also returns what of the message
// it stored in the history ("" if nothing). The message is stored before
// the model is called, so that a turn cut short by a crash keeps it; the
// turn's other messages follow when it ends. A turn whose context is
// cancelled with ErrDiscarded keeps its stored message: the turn that
// answers it with the next one gets it in Message.Stored.
//
// Turns of one session must not overlap in this process (package
// session runs them one at a time): a turn of the session that started
// and never ended, in this process or in one that is gone, is ended
// first as interrupted (see EndInterrupted).
func (o *Orchestrator) AskMessage(ctx context.Context, session, user string, msg Message) (agent.Result, string, error) {
	// Read even when the turn is already cancelled (a message merged into
	// the next one at once): the turn then still starts and ends
	// cancelled in the session's stream and the audit log.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var history []llm.Message
	if !msg.New {
		o.endInterrupted(rctx, session, user)
	}
	if o.cfg.History != nil && !msg.New {
		h, err := o.cfg.History.Load(rctx, session)
		if err != nil {
			return agent.Result{Status: lifecycle.Error, Err: err}, "", fmt.Errorf("load session %s: %w", session, err)
		}
		history = o.withImages(rctx, withoutStored(h, msg.Stored))
	}
	limits, share, err := o.limits(rctx, session)
	if err != nil {
		return agent.Result{Status: lifecycle.Error, Err: err}, "", err
	}
	// The turn's spend counts live against the session's budget until
	// it is stored (o.spend), then leaves the ledger's live figure.
	var shared agent.Budget
	if share != nil {
		defer share.Leave()
		shared = share
	}
	input, _ := o.personMessage(rctx, msg.Text)
	if msg.Report {
		input = llm.UserText(ReportInstruction)
	}
	stored := ""
	if o.cfg.History != nil && !msg.Report {
		if fresh := msg.unstored(); fresh != "" {
			_, keep := o.personMessage(rctx, fresh)
			if err := o.cfg.History.SaveKeyed(rctx, session, []llm.Message{keep}, msg.Idempotency); err != nil {
				err = fmt.Errorf("store the message to session %s: %w", session, err)
				return agent.Result{Status: lifecycle.Error, Err: err}, "", err
			}
			stored = fresh
		}
	}
	// The turn's start goes out without waiting, in order before its
	// other events (the session's events keep their order): the model
	// request need not wait for its store write. The turn's end is
	// published and waited for, so every event of the turn is stored
	// when it returns.
	o.publishAsync(session, user, event.New(event.SessionStart, event.SessionContent{Model: o.cfg.Model.Name(), Offline: o.cfg.Offline,
		Instance: o.instanceID(), Report: msg.Report}))
	a := agent.New(agent.Config{
		Model:      o.cfg.Model,
		InputIsAva: msg.Report,
		System:     SystemPrompt(o.cfg.Tools, o.cfg.Workspace, o.now()),
		Tools:      o.cfg.Tools,
		Limits:     limits,
		Budget:     shared,
		Caller:     tool.Caller{AgentID: event.OrchestratorID, SessionKey: session, Workspace: o.cfg.Workspace, User: user},
		User:       user,
		Publisher:  o.cfg.Hub,
		Logger:     o.log,
		Clock:      o.cfg.Clock,
		Tracer:     o.cfg.Tracer,
		AgentName:  AgentName,
	})
	res := a.Run(ctx, history, input)
	spend := o.spend(ctx, session, res)
	if share != nil {
		share.Leave()
	}
	end := event.New(event.SessionEnd, event.SessionContent{Status: res.Status, Model: o.cfg.Model.Name(), Offline: o.cfg.Offline,
		Spend: spend})
	end.Meta = event.Meta{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, CostCents: res.CostCents,
		ModelID: o.cfg.Model.Name(), DurationMs: res.Duration.Milliseconds()}
	o.publish(session, user, end)
	// The person's message is stored; the turn's own messages follow it.
	if o.cfg.History != nil && len(res.Messages) > len(history)+1 && !errors.Is(context.Cause(ctx), ErrDiscarded) {
		// Save even when the caller's context is gone: the turn happened.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := o.cfg.History.Save(sctx, session, res.Messages[len(history)+1:]); err != nil {
			return res, stored, fmt.Errorf("save session %s: %w", session, err)
		}
	}
	return res, stored, nil
}

// unstored is the part of m.Text the history does not hold yet.
func (m Message) unstored() string {
	if len(m.Stored) == 0 {
		return m.Text
	}
	rest, ok := strings.CutPrefix(m.Text, strings.Join(m.Stored, "\n\n"))
	if !ok {
		return m.Text
	}
	return strings.TrimPrefix(rest, "\n\n")
}

// withoutStored takes the stored parts of a merged turn's message out of
// the history's last messages (after the orchestrator's last answer),
// the last occurrence of each, so that the prompt has them once, in the
// turn's message. A part not found is left where it is.
func withoutStored(history []llm.Message, parts []string) []llm.Message {
	if len(parts) == 0 {
		return history
	}
	out := slices.Clone(history)
	for i := len(parts) - 1; i >= 0; i-- {
		out = removeLastText(out, parts[i])
	}
	return out
}

// removeLastText removes the last text block equal to text from the user
// messages after the last assistant message, with the image blocks after
// it that text attaches (the turn's message holds them again), dropping
// a message left empty.
func removeLastText(msgs []llm.Message, text string) []llm.Message {
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == llm.RoleUser; i-- {
		for j := len(msgs[i].Content) - 1; j >= 0; j-- {
			if b := msgs[i].Content[j]; b.Type != llm.BlockText || b.Text != text {
				continue
			}
			end := j + 1
			for end < len(msgs[i].Content) && isImageOf(msgs[i].Content[end], text) {
				end++
			}
			msgs[i].Content = slices.Delete(slices.Clone(msgs[i].Content), j, end)
			if len(msgs[i].Content) == 0 {
				return slices.Delete(msgs, i, i+1)
			}
			return msgs
		}
	}
	return msgs
}

// instanceID is the ID recorded as a turn's owner ("" without Owner).
func (o *Orchestrator) instanceID() string {
	if o.cfg.Owner == nil {
		return ""
	}
	return o.cfg.Owner.ID()
}

// ErrDiscarded, as (or wrapped in) the cause a turn's context is
// cancelled with, means the turn is redone as part of another (a message
// merged into the next): its messages are not saved to the history.
var ErrDiscarded = errors.New("turn discarded")

// ErrBudgetSpent means the session's budget is used up.
var ErrBudgetSpent = errors.New("the session's budget is spent")

// limits are the configured limits with the cost cap lowered to what is
// left of the session's budget, if it has one: its cap minus what the
// session's turns and subagents spent, stored or live, and what their
// calls in flight reserved. With a budget it also returns the turn's
// share of it, which its calls reserve from (the caller leaves it once
// the turn's spend is stored).
func (o *Orchestrator) limits(ctx context.Context, session string) (agent.Limits, *budget.Share, error) {
	l := o.cfg.Limits
	if o.cfg.Ledger == nil {
		return l, nil, nil
	}
	st, err := o.cfg.Ledger.Standing(ctx, session)
	if err != nil {
		return l, nil, fmt.Errorf("session %s: %w", session, err)
	}
	if !st.Limited {
		return l, nil, nil
	}
	left := st.Left()
	if left <= 0 {
		return l, nil, fmt.Errorf("session %s: %w (%s of %s spent or reserved by its turns and subagents)", session, ErrBudgetSpent, money.Cents(st.Budget-left), money.Cents(st.Budget))
	}
	if l.MaxCostCents == 0 || l.MaxCostCents > left {
		l.MaxCostCents = left
	}
	return l, o.cfg.Ledger.Join(session), nil
}

// spend adds the turn's own spend to the session (its subagents add
// theirs when they end) and returns the session's spend rolled up, for
// the turn's SessionEnd (nil without a store).
func (o *Orchestrator) spend(ctx context.Context, session string, res agent.Result) *event.Spend {
	if o.cfg.Sessions == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if res.CostCents > 0 || res.Usage.Total() > 0 {
		sp := store.Spend{Model: o.cfg.Model.Name(), Usage: event.Usage{Tokens: res.Usage.Total(), CostCents: res.CostCents,
			CachedTokens: res.Usage.CacheReadTokens}}
		if err := o.cfg.Sessions.AddSessionSpend(sctx, session, sp); err != nil {
			o.log.Error("record session spend", "session", session, "err", err)
		}
	}
	rollup, err := o.cfg.Sessions.SessionSpend(sctx, session)
	if err != nil {
		o.log.Error("read session spend", "session", session, "err", err)
		return nil
	}
	return &rollup
}

func (o *Orchestrator) publish(session, user string, ev event.Event) {
	ev = o.stamp(session, user, ev)
	_, err := o.cfg.Hub.Publish(ev)
	o.published(ev, err)
}

// publishAsync is publish without waiting for the event to be stored.
func (o *Orchestrator) publishAsync(session, user string, ev event.Event) {
	o.cfg.Hub.PublishAsync(o.stamp(session, user, ev), o.published)
}

// stamp makes ev the orchestrator's, in session, for user, now.
func (o *Orchestrator) stamp(session, user string, ev event.Event) event.Event {
	ev.Session, ev.Agent, ev.User, ev.Time = session, event.OrchestratorID, user, o.now()
	return ev
}

// published logs a session event that could not be published.
func (o *Orchestrator) published(ev event.Event, err error) {
	if err != nil {
		o.log.Error("publish session event", "session", ev.Session, "type", ev.Type, "err", err)
	}
}

// ResultJSON is the machine-readable form of a turn's result (ava run
// --json).
type ResultJSON struct {
	Status     lifecycle.Status `json:"status"`
	Text       string           `json:"text"`
	Session    string           `json:"session"`
	Model      string           `json:"model"`
	Offline    bool             `json:"offline"`
	Tokens     Tokens           `json:"tokens"`
	CostCents  float64          `json:"cost_cents"`
	DurationMs int64            `json:"duration_ms"`
	Iterations int              `json:"iterations"`
	Error      string           `json:"error,omitempty"`
}

// Masked returns a copy of r with its free text (the answer and the
// error) masked by red; a nil red masks the credential formats only.
// Every surface reads a turn's result masked (session.Turn.Wait).
func (r ResultJSON) Masked(red *redact.Redactor) ResultJSON {
	if red == nil {
		red = &redact.Redactor{}
	}
	r.Text, r.Error = red.String(r.Text), red.String(r.Error)
	return r
}

// Tokens is a token breakdown.
type Tokens struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read"`
	CacheWrite int `json:"cache_write"`
	Total      int `json:"total"`
}

// JSON returns the result's machine-readable form.
func JSON(res agent.Result, session string, model llm.Model, offline bool) ResultJSON {
	out := ResultJSON{Status: res.Status, Text: res.Text, Session: session, Model: model.Name(), Offline: offline,
		Tokens: Tokens{Input: res.Usage.InputTokens, Output: res.Usage.OutputTokens, CacheRead: res.Usage.CacheReadTokens,
			CacheWrite: res.Usage.CacheWriteTokens, Total: res.Usage.Total()},
		CostCents: res.CostCents, DurationMs: res.Duration.Milliseconds(), Iterations: res.Iterations}
	if res.Err != nil && res.Status != lifecycle.Success {
		out.Error = res.Err.Error()
	}
	return out
}

// AnnounceResults is a report turn without a model call (on_complete:
// announce): it posts the background results at the end of the
// session's history to the person as they are, as the orchestrator's
// message, and stores it in the history.
func (o *Orchestrator) AnnounceResults(ctx context.Context, session string) (agent.Result, error) {
	start := o.now()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	o.endInterrupted(rctx, session, "")
	var results []string
	if o.cfg.History != nil {
		h, err := o.cfg.History.Load(rctx, session)
		if err != nil {
			return agent.Result{Status: lifecycle.Error, Err: err}, fmt.Errorf("load session %s: %w", session, err)
		}
		for i := len(h) - 1; i >= 0 && h[i].Role == llm.RoleUser; i-- {
			results = append([]string{h[i].TextContent()}, results...)
		}
	}
	text := "Your background subagents have finished. Their results:\n\n" + strings.Join(results, "\n\n")
	o.publish(session, "", event.New(event.SessionStart, event.SessionContent{Model: o.cfg.Model.Name(), Offline: o.cfg.Offline,
		Instance: o.instanceID(), Report: true}))
	o.publish(session, "", event.New(event.AssistantMessage, event.TextContent{Text: text}))
	reply := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(text)}}
	res := agent.Result{Status: lifecycle.Success, Text: text, Messages: []llm.Message{reply}, Duration: o.now().Sub(start)}
	o.publish(session, "", event.New(event.SessionEnd, event.SessionContent{Status: res.Status, Model: o.cfg.Model.Name(),
		Offline: o.cfg.Offline}))
	if o.cfg.History != nil {
		if err := o.cfg.History.Save(rctx, session, []llm.Message{reply}); err != nil {
			return res, fmt.Errorf("save session %s: %w", session, err)
		}
	}
	return res, nil
}

// Package agent runs Ava's agent loop: call the model, run the tools it
// asks for (several at once when it asks for several), feed the results
// back, and repeat until the model gives a final answer or a limit ends
// the run. Every step is published as an event.Event; the loop never
// writes files itself.
//
// Limits each end the run with their own status (see Status): the
// wall-clock timeout, the cost cap, the token cap and the iteration cap.
// The timeout cancels the run's context (aborting the model stream and
// every running tool); the iteration cap counts model calls; the token
// cap is checked after every response that asks for more work, and each
// response's output is capped at what is left of it.
//
// # Cost
//
// The cost cap (Limits.MaxCostCents) and a shared Budget (Config.Budget,
// such as a parallel group's) bound each model call before it is made:
//
//   - The call's input cost is estimated (the provider's count is only
//     known after the call). What the provider counted for the previous
//     request of the run is taken at its count and the rate it was
//     charged; what was added since (all of it on the first call: system
//     prompt, messages, tool definitions) is estimated by character class,
//     meant to be at or above what byte-pair tokenizers count: a token per
//     4 ASCII letters of a word, per 3 digits of a number, per symbol, per
//     2 non-ASCII bytes and per run of line breaks, plus 4 tokens a message
//     and 400 when tools are offered; it is priced at the model's highest
//     input rate (its cache-write rate where it has one).
//   - Its output is bounded by setting the request's output limit
//     (llm.Request.MaxTokens) to what the rest buys at the model's output
//     price, never above the configured limit (8192 when none is
//     configured). Under a cost bound the limit is always sent, since some
//     providers have none by default; thinking is turned off for a call
//     whose limit leaves no room for its thinking budget.
//   - A call that offers the provider's own web search
//     (Config.ServerTools) also sets aside what its searches may cost at
//     most: ServerTools.MaxUses at the model's price per search
//     (llm.Price.PerSearch), as part of the call's fixed cost.
//   - A call that cannot fit (its estimated input plus 16 output tokens
//     is more than is left) is not made: the run ends cost_exceeded.
//   - The shared Budget reserves what the call may cost at most and is
//     settled with what it did cost, so that runs sharing it never
//     together exceed it.
//
// Provided the provider honours the output limit, a run can therefore end
// above its cap only by the estimate's shortfall on the input tokens added
// since the previous call, or on the rate of a prefix the provider charged
// as a cache read last time and not this time (see docs/caps.md). A run whose recorded cost ends above
// its cap, or whose final answer was cut by the cost bound, ends
// cost_exceeded with the text it got; a response that asks for tools is
// checked against the cap before the tools run. Models with no known
// price (llm.Model.Priced false, or all prices zero) are not bounded by
// cost: their calls are counted as free.
//
// A tool that fails, an unknown tool name, or arguments that are not
// valid JSON go back to the model as an error result; they never end the
// run.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptrace"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tracing"
)

// Limits bound one run. A zero field means no limit.
type Limits struct {
	Timeout       time.Duration `json:"timeout"`
	MaxCostCents  float64       `json:"max_cost_cents"`
	MaxTokens     int           `json:"max_tokens"`
	MaxIterations int           `json:"max_iterations"`
}

// Config is what a run needs.
type Config struct {
	// Model is the resolved model to call.
	Model llm.Model
	// InputIsAva marks a run whose input is Ava's own instruction (a
	// report turn), not the person's: it is given to the model but not
	// published as a UserMessage.
	InputIsAva bool
	// System is the system prompt.
	System string
	// Tools are the tools the model may call; nil means none.
	Tools *tool.Registry
	// ServerTools, when set, offers the provider's own tools (its web
	// search and fetch), which it runs on its side: each use is published
	// as activity and as a ToolCall and ToolResult event, and priced from
	// the usage the provider reports.
	ServerTools *llm.ServerTools
	// Limits bound the run.
	Limits Limits
	// MaxOutputTokens caps each response (0: the provider's default).
	MaxOutputTokens int
	// ThinkingBudget enables extended thinking when > 0.
	ThinkingBudget int
	// Caller identifies the agent to its tools and in its events.
	Caller tool.Caller
	// User is the human the run acts for, when known.
	User string
	// ParentAgent is the agent that started this one, for event metadata.
	ParentAgent string
	// WrapUpAt is the share (0–1) of any limit (time, cost, tokens,
	// iterations) at which the model is told, in its next call, to finish
	// with what it has; 0: never.
	WrapUpAt float64
	// Inbox, when set, is called before each model call and returns the
	// messages sent to the run since (steering): each joins the
	// conversation as the person's message at that point.
	Inbox func() []string
	// Unread gets back the messages Inbox gave for a model call that
	// failed: the model never read them.
	Unread func([]string)
	// CheckAnswer, when set, vets the final answer: an error ends the run
	// with ErrEmptyResult and that reason. Nil: any answer is success.
	CheckAnswer func(text string) error
	// Checkpoint, when set, is called after each step that asks for
	// tools: once when the model's response has joined the conversation,
	// before its tools run (ToolsPending), and once when their results
	// have, before the next model call. A step that ends the run (a final
	// answer, a limit) gets no call: the run's end records it. An error
	// ends the run with lifecycle.Error, so no tool runs whose call could
	// not be recorded.
	Checkpoint func(Checkpoint) error
	// Hold, when set, is called before each model call and before a
	// step's tools start: it returns nil while this process still owns
	// the run (a fresh ownership check), an error wrapping ErrNotOwner
	// when it does not, which ends the run before the call. It may wait
	// (the store is unreachable) until ctx ends.
	Hold func(ctx context.Context) error
	// Budget is a cost budget shared with other runs (a parallel group's);
	// nil means only Limits.MaxCostCents bounds the run's cost.
	Budget Budget
	// Publisher receives every event; nil publishes nowhere.
	Publisher event.Publisher
	// Clock is the time source (tests); nil is time.Now.
	Clock func() time.Time
	// Logger receives operational logs; nil is slog.Default().
	Logger *slog.Logger
	// Tracer records the run as OpenTelemetry spans (invoke_agent, a
	// chat span per model call, an execute_tool span per tool call);
	// nil traces nothing.
	Tracer *tracing.Tracer
	// AgentName is the agent's name in its spans (gen_ai.agent.name: the
	// role of a subagent); empty is Caller.AgentID, which is always the
	// agent's ID (gen_ai.agent.id).
	AgentName string
	// TraceLinks link the run's span to others (a follow-up turn to the
	// run it continues).
	TraceLinks []trace.Link
	// Started, if set, is called once per Run when its events start
	// going out: once the first model request is written, or a few
	// milliseconds into the first call (a provider that is not an HTTP
	// client), or 100 ms after the Run began (what comes before the
	// first call takes long), or when the run ended without one. It must only queue work: it is called
	// under a lock the Run's end waits for.
	Started func()
}

// Checkpoint is the state of a run after a completed step, given to
// Config.Checkpoint.
type Checkpoint struct {
	// Messages is the whole conversation so far (history, input and
	// every step); it is the loop's own slice: read it during the call,
	// never keep or change it.
	Messages []llm.Message
	// ToolsPending is set when the last message asks for tools that have
	// not run yet.
	ToolsPending bool
	Usage        llm.Usage
	CostCents    float64
	Iterations   int
}

// Result is how a run ended.
type Result struct {
	Status lifecycle.Status
	// Text is the final answer, or the last text the model gave.
	Text string
	// Messages is the whole conversation: history, input and every turn.
	Messages   []llm.Message
	Usage      llm.Usage
	CostCents  float64
	Duration   time.Duration
	Iterations int
	// Err says why a run that did not succeed ended.
	Err error
	// SpanContext is the run's invoke_agent span, invalid when untraced.
	SpanContext trace.SpanContext
}

// Agent is one agent's loop and its live status. Run it once at a time;
// Snapshot may be called from any goroutine.
type Agent struct {
	cfg Config
	now func() time.Time
	log *slog.Logger

	mu   sync.Mutex
	snap Snapshot

	emitMu  sync.Mutex
	emitErr error
	// emitting counts events handed to an AsyncPublisher and not yet
	// stored and delivered; Run waits for them before it returns.
	emitting sync.WaitGroup
	// gate holds a run's first events until its first request is out.
	gate startGate
}

// Snapshot is a run's live status, cheap to read at any time.
type Snapshot struct {
	Status     lifecycle.Status
	Iteration  int
	Usage      llm.Usage
	Tokens     int
	CostCents  float64
	StartedAt  time.Time
	Activity   string
	LastTool   string
	LastToolAt time.Time
	// LastProgress is when the model last streamed something or a tool
	// last reported progress: the watchdog's measure of life.
	LastProgress time.Time
}

// New returns an agent for cfg.
func New(cfg Config) *Agent {
	a := &Agent{cfg: cfg, now: cfg.Clock, log: cfg.Logger}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.snap.Status = lifecycle.Pending
	return a
}

// Snapshot returns the live status.
func (a *Agent) Snapshot() Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.snap
}

func (a *Agent) update(f func(s *Snapshot)) {
	a.mu.Lock()
	f(&a.snap)
	a.mu.Unlock()
}

// touch records a sign of life.
func (a *Agent) touch() {
	t := a.now()
	a.update(func(s *Snapshot) { s.LastProgress = t })
}

// emit publishes ev stamped with this agent's identity. With an
// AsyncPublisher the loop does not wait for the store: the events keep
// their order, each is stored before anyone sees it, and Run waits for
// them all before it returns. The first publishing error is kept: a run
// whose events cannot be recorded ends with lifecycle.Error rather than
// go on unrecorded.
func (a *Agent) emit(ev event.Event) {
	if a.cfg.Publisher == nil {
		return
	}
	ev.Session, ev.Agent, ev.User = a.cfg.Caller.SessionKey, a.cfg.Caller.AgentID, a.cfg.User
	if ev.Meta.ParentAgentID == "" {
		ev.Meta.ParentAgentID = a.cfg.ParentAgent
	}
	if ev.Time.IsZero() {
		ev.Time = a.now()
	}
	if ap, ok := a.cfg.Publisher.(event.AsyncPublisher); ok {
		a.gate.mu.Lock()
		defer a.gate.mu.Unlock()
		if !a.gate.open {
			a.gate.held = append(a.gate.held, ev)
			return
		}
		a.publishAsync(ap, ev)
		return
	}
	_, err := a.cfg.Publisher.Publish(ev)
	a.emitFailed(err)
}

// publishAsync hands ev to ap; Run waits for it before it returns.
func (a *Agent) publishAsync(ap event.AsyncPublisher, ev event.Event) {
	a.emitting.Add(1)
	ap.PublishAsync(ev, func(_ event.Event, err error) {
		a.emitFailed(err)
		a.emitting.Done()
	})
}

// startGate holds the events a run emits before its first model request
// is written (the user message, the first activity): on a busy machine
// storing them (a transaction, a synced session file) competed with the
// request for the CPU, adding about a third to the time from a spawn to
// its first request. They go out, in order and ahead of any later
// event, once the request is written, or startHoldMax after the call
// began, or when it returned, or when the run ended without one; each
// is still stored before anyone sees it, and Run still waits for them
// all.
type startGate struct {
	mu    sync.Mutex
	open  bool
	held  []event.Event
	timer *time.Timer // opens the gate startHoldMax after the Run began
}

// holdStart closes the gate for a new Run when events are published
// asynchronously; otherwise (each publish waits for the store) the run's
// events go out as they come and Started is called at once.
func (a *Agent) holdStart() {
	if _, ok := a.cfg.Publisher.(event.AsyncPublisher); ok {
		a.gate.mu.Lock()
		a.gate.open, a.gate.held = false, nil
		// Also armed at the Run's start, not only at its first call:
		// what comes before the call (a group's budget reservation, the
		// instance's hold) may take long, and the parent waits for the
		// spawn.
		a.gate.timer = time.AfterFunc(startHoldLongest, a.releaseStart)
		a.gate.mu.Unlock()
		return
	}
	a.gate.mu.Lock()
	a.gate.open = true
	a.gate.mu.Unlock()
	if a.cfg.Started != nil {
		a.cfg.Started()
	}
}

// releaseStart opens the gate, publishing the held events in order, and
// calls Started; it does nothing once the gate is open. Started is
// called under the gate's lock: a later releaseStart (the Run's end)
// returns only after it, so what Started publishes (the parent's
// SubagentSpawn) is queued before anything the run's end publishes.
func (a *Agent) releaseStart() {
	a.gate.mu.Lock()
	defer a.gate.mu.Unlock()
	if a.gate.open {
		return
	}
	a.gate.open = true
	if a.gate.timer != nil {
		a.gate.timer.Stop()
		a.gate.timer = nil
	}
	held := a.gate.held
	a.gate.held = nil
	ap, _ := a.cfg.Publisher.(event.AsyncPublisher)
	for _, ev := range held {
		a.publishAsync(ap, ev)
	}
	if a.cfg.Started != nil {
		a.cfg.Started() // only queues its publishing (Config.Started)
	}
}

// startHoldMax bounds how long the held events wait for the first
// request to be written once the call began: a provider that calls no
// HTTP server (or one still connecting) releases them after it, not at
// the end of its call.
const startHoldMax = 5 * time.Millisecond

// startHoldLongest bounds the hold from the Run's start, whatever comes
// before its first call.
const startHoldLongest = 100 * time.Millisecond

// traceWritten is ctx with an HTTP client trace that releases the held
// events once a request is written, and a timer that releases them
// startHoldMax into the call at the latest; stop the timer when the call
// returns.
func (a *Agent) traceWritten(ctx context.Context) (context.Context, func() bool) {
	a.gate.mu.Lock()
	open := a.gate.open
	a.gate.mu.Unlock()
	if open {
		return ctx, func() bool { return false }
	}
	t := time.AfterFunc(startHoldMax, a.releaseStart)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { a.releaseStart() }}), t.Stop
}

// emitFailed keeps the first publishing error.
func (a *Agent) emitFailed(err error) {
	if err == nil {
		return
	}
	a.emitMu.Lock()
	defer a.emitMu.Unlock()
	if a.emitErr == nil {
		a.emitErr = err
		a.log.Error("event publishing failed; ending the run", "agent", a.cfg.Caller.AgentID, "err", err)
	}
}

func (a *Agent) publishErr() error {
	a.emitMu.Lock()
	defer a.emitMu.Unlock()
	return a.emitErr
}

// activity sets and publishes the current activity.
func (a *Agent) activity(text string) {
	a.update(func(s *Snapshot) { s.Activity = text })
	a.emit(event.New(event.Activity, event.TextContent{Text: text}))
}

// Run runs the loop on history plus input (the new user message) and
// returns how it ended. It returns when the model answers, a limit is
// reached, or ctx is done (its cause, if one of the Err* causes, decides
// the status). Nothing it started is left running when it returns.
func (a *Agent) Run(ctx context.Context, history []llm.Message, input llm.Message) Result {
	start := a.now()
	a.update(func(s *Snapshot) {
		s.Status, s.StartedAt, s.LastProgress = lifecycle.Running, start, start
	})
	ctx, span := a.startAgentSpan(ctx, input)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var clock *runClock
	if t := a.cfg.Limits.Timeout; t > 0 {
		clock = startClock(t, func() { cancel(ErrTimeout) })
		defer clock.stop()
		ctx = context.WithValue(ctx, clockKey{}, clock)
	}
	r := &run{a: a, ctx: ctx, msgs: append(append(make([]llm.Message, 0, len(history)+8), history...), input),
		defs: toolDefs(a.cfg.Tools), start: start, clock: clock}
	a.holdStart()
	if !a.cfg.InputIsAva {
		a.emit(event.New(event.UserMessage, event.TextContent{Text: input.TextContent()}))
	}
	err := r.loop()
	a.releaseStart()
	a.emitting.Wait()
	if err == nil {
		err = a.publishErr()
	}
	res := Result{Status: StatusOf(err), Text: r.text, Messages: r.msgs, Usage: r.usage,
		CostCents: r.cost, Duration: a.now().Sub(start), Iterations: r.iter, Err: err, SpanContext: span.SpanContext()}
	if res.Status == lifecycle.Error {
		a.emit(event.New(event.Error, event.ErrorContent{Error: err.Error(), Fatal: true}))
		a.emitting.Wait()
	}
	a.update(func(s *Snapshot) { s.Status = res.Status })
	a.endAgentSpan(span, res)
	return res
}

// run is the state of one Run.
type run struct {
	a     *Agent
	ctx   context.Context
	defs  []llm.ToolDef // the tools as the model sees them
	msgs  []llm.Message
	usage llm.Usage
	cost  float64
	iter  int
	text  string
	seen  inputSeen // the previous request's input, as the provider counted it
	start time.Time
	clock *runClock // the timeout, when the run has one
	// ratePaused is how much waiting for rate limits was kept off the
	// timeout so far (see MaxRateLimitPause).
	ratePaused time.Duration
	// warned is set once the model was told to wrap up.
	warned bool
}

// loop iterates until an answer (nil) or an ending error.
func (r *run) loop() error {
	lim := r.a.cfg.Limits
	for {
		if err := r.stopped(); err != nil {
			return err
		}
		if err := r.hold(); err != nil {
			return err
		}
		steers, added := r.addNotes()
		resp, plan, err := r.callModel()
		if err != nil {
			r.dropNotes(steers, added)
			return err
		}
		r.msgs = append(r.msgs, resp.Message)
		if t := resp.Message.TextContent(); t != "" {
			r.text = t
		}
		calls := resp.Message.ToolCalls()
		if len(calls) == 0 && resp.StopReason == llm.StopPause {
			// The provider paused a long run of its own tools: send the
			// turn back and it goes on.
			if err := r.overBudget(); err != nil {
				return err
			}
			if lim.MaxIterations > 0 && r.iter >= lim.MaxIterations {
				return fmt.Errorf("%w: %d model calls and the provider's tools are still running", ErrIterationsExceeded, r.iter)
			}
			continue
		}
		if len(calls) == 0 {
			if err := r.a.publishErr(); err != nil {
				return err
			}
			if err := r.overCapAtEnd(plan, resp); err != nil {
				return err
			}
			return r.checkAnswer(resp.Message.TextContent())
		}
		if err := r.overBudget(); err != nil {
			return err
		}
		if lim.MaxIterations > 0 && r.iter >= lim.MaxIterations {
			return fmt.Errorf("%w: %d model calls and the model still wants tools", ErrIterationsExceeded, r.iter)
		}
		if err := r.checkpoint(true); err != nil {
			return err
		}
		if err := r.hold(); err != nil {
			return err
		}
		results := r.runTools(calls)
		r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: results})
		if err := r.checkpoint(false); err != nil {
			return err
		}
	}
}

// checkpoint hands the conversation to Config.Checkpoint, if set.
func (r *run) checkpoint(toolsPending bool) error {
	cp := r.a.cfg.Checkpoint
	if cp == nil {
		return nil
	}
	err := cp(Checkpoint{Messages: r.msgs, ToolsPending: toolsPending, Usage: r.usage, CostCents: r.cost, Iterations: r.iter})
	if err != nil {
		return fmt.Errorf("checkpoint after model call %d: %w", r.iter, err)
	}
	return nil
}

// hold asks Config.Hold, if set, whether the run is still this
// process's: a call starts only after a fresh ownership check.
func (r *run) hold() error {
	if r.a.cfg.Hold == nil {
		return nil
	}
	err := r.a.cfg.Hold(r.ctx)
	if err != nil && r.ctx.Err() != nil {
		return context.Cause(r.ctx)
	}
	return err
}

// stopped returns the reason the run must stop now, if any.
func (r *run) stopped() error {
	if r.ctx.Err() != nil {
		return context.Cause(r.ctx)
	}
	return r.a.publishErr()
}

// overBudget checks the cost and token caps.
func (r *run) overBudget() error {
	lim := r.a.cfg.Limits
	if lim.MaxCostCents > 0 && r.cost >= lim.MaxCostCents {
		return fmt.Errorf("%w: spent %.2f¢ of %.2f¢", ErrCostExceeded, r.cost, lim.MaxCostCents)
	}
	if lim.MaxTokens > 0 && r.usage.Total() >= lim.MaxTokens {
		return fmt.Errorf("%w: used %d of %d tokens", ErrTokensExceeded, r.usage.Total(), lim.MaxTokens)
	}
	return nil
}

// callModel bounds one model turn by what is left (see plan), streams it,
// and publishes deltas, thinking, the answer's text and the cost.
func (r *run) callModel() (*llm.Response, *callPlan, error) {
	a := r.a
	req := &llm.Request{Model: a.cfg.Model.ID, System: a.cfg.System, Messages: r.msgs,
		Tools: r.defs, ThinkingBudget: a.cfg.ThinkingBudget, ServerTools: a.cfg.ServerTools}
	plan, err := r.plan(req)
	if err != nil {
		if r.ctx.Err() != nil {
			return nil, nil, context.Cause(r.ctx)
		}
		return nil, nil, err
	}
	r.iter++
	a.update(func(s *Snapshot) { s.Iteration = r.iter })
	// The activity names the model only: the count of model calls is the
	// run's figure (over all its turns, which this turn's loop does not
	// know), shown beside it.
	a.activity("calling " + a.cfg.Model.Name())
	sctx, span := r.startChatSpan(req)
	sctx, stopHold := a.traceWritten(sctx)
	sctx = llm.WithWaitNotice(sctx, r.rateWait)
	resp, err := a.cfg.Model.Provider.Stream(sctx, req, r.onDelta)
	stopHold()
	a.releaseStart()
	if err != nil {
		r.endChatSpan(span, nil, 0, err)
		plan.settle(0)
		if r.ctx.Err() != nil {
			return nil, nil, context.Cause(r.ctx)
		}
		return nil, nil, fmt.Errorf("model %s: %w", a.cfg.Model.Name(), err)
	}
	cost := r.account(resp)
	r.endChatSpan(span, resp, cost, nil)
	r.publishServerTools(resp.Message)
	plan.settle(cost)
	plan.cost = cost
	r.observe(plan, resp.Usage)
	for _, b := range resp.Message.Content {
		if b.Type == llm.BlockThinking && b.Text != "" {
			a.emit(event.New(event.ExtendedThinking, event.ThinkingContent{Thinking: b.Text}))
		}
	}
	if t := resp.Message.TextContent(); t != "" {
		ev := event.New(event.AssistantMessage, event.TextContent{Text: t})
		ev.Meta = event.Meta{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, ModelID: a.cfg.Model.Name()}
		a.emit(ev)
	}
	return resp, plan, nil
}

// outputCap is the response's output limit: the configured one (0: the
// provider's default), lowered to what is left of the token cap.
func (r *run) outputCap() int {
	out := r.a.cfg.MaxOutputTokens
	if capTokens := r.a.cfg.Limits.MaxTokens; capTokens > 0 {
		left := max(capTokens-r.usage.Total(), 1)
		limit := out
		if limit == 0 {
			limit = defaultOutputLimit
		}
		if left < limit {
			out = left
		}
	}
	return out
}

// account adds a response's usage and cost, publishes a CostUpdate and
// returns the response's cost.
func (r *run) account(resp *llm.Response) float64 {
	a := r.a
	cost := a.cfg.Model.Price.Cost(resp.Usage)
	r.usage = r.usage.Add(resp.Usage)
	r.cost += cost
	a.update(func(s *Snapshot) {
		s.Usage, s.Tokens, s.CostCents = r.usage, r.usage.Total(), r.cost
	})
	ev := event.New(event.CostUpdate, event.CostContent{
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CacheReadTokens: resp.Usage.CacheReadTokens, CacheWriteTokens: resp.Usage.CacheWriteTokens,
		WebSearches: resp.Usage.WebSearches, CostCents: cost, TotalTokens: r.usage.Total(), TotalCostCents: r.cost, Unpriced: !a.cfg.Model.Priced,
	})
	ev.Meta = event.Meta{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CostCents: cost, ModelID: a.cfg.Model.Name()}
	a.emit(ev)
	return cost
}

// onDelta publishes a streamed piece of the turn.
func (r *run) onDelta(d llm.Delta) {
	a := r.a
	a.touch()
	switch d.Type {
	case llm.DeltaText:
		a.emit(event.New(event.TextDelta, event.TextContent{Text: d.Text}))
	case llm.DeltaThinking:
		a.emit(event.New(event.ThinkingDelta, event.TextContent{Text: d.Text}))
	case llm.DeltaToolCall:
		a.activity("preparing a call to " + d.ToolName)
	case llm.DeltaServerTool:
		a.activity(serverActivity(d.ToolName, d.Input))
	case llm.DeltaReset:
		msg := "model call failed"
		if d.Err != nil {
			msg = d.Err.Error()
		}
		a.emit(event.New(event.Retry, event.RetryContent{Attempt: d.Attempt, Error: msg}))
	}
}

func toolDefs(reg *tool.Registry) []llm.ToolDef {
	var defs []llm.ToolDef
	for _, t := range reg.Tools() {
		defs = append(defs, llm.ToolDef{Name: t.Name(), Description: t.Description(), Schema: t.Schema()})
	}
	return defs
}

// errorsIsContext reports whether err came from a done context.
func errorsIsContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

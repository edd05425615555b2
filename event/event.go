// Package event is Ava's one event pipeline. Every step of every agent —
// a user message, a streamed piece of text, a tool call, a cost update, a
// subagent's spawn and completion — becomes an Event published to a Hub.
//
// Delivery rules:
//   - Kept events (every type but the live-only ones, see Type.Kept) are
//     numbered: each session (main or subagent) has its own sequence,
//     starting at 1 and increasing by one with no holes. The Hub is the
//     only place that assigns numbers. It continues from the last number
//     stored in its Log, whoever published it (this process or another),
//     and stores the event in the Log before anyone else sees it: a
//     number is durable before it is delivered. When two processes
//     publish to one session at once, the Log refuses the second use of a
//     number (ErrSeqTaken) and the loser draws the next one, so numbers
//     are never reused.
//   - Live-only events (TextDelta, ThinkingDelta, Activity, Stalled,
//     Retry) get no number (Seq 0) and are not stored: they are for whoever
//     is watching at the moment.
//   - Within a session, sinks and subscribers see events in publishing
//     order. Publish holds the session's lock while it stores, hands the
//     event to the sinks, and appends it to the journal.
//   - Sinks (the audit log, the session file) are durable and
//     synchronous: Publish returns only when each has accepted the event
//     (the events one commit stored go to a BatchSink at once, so that
//     it syncs once for all of them),
//     so a slow disk slows the agents down (back-pressure) instead of
//     losing events, and a sink's error is returned to the publisher.
//   - Subscribers are views. A Subscription starts from any sequence
//     number: it replays what it has not seen from the Log, then reads
//     the session's in-memory journal at its own pace, so a slow
//     subscriber never stalls the publisher. A subscriber that falls
//     behind the journal's window, or meets numbers published by another
//     process, catches up from the Log by itself: it never sees a hole
//     and never sees an event twice.
//   - With a redactor (Hub.SetRedactor) every event's content is masked
//     as it is published, before it is numbered, so the Log, the sinks and
//     the subscribers all see the same masked event. Streamed text is held
//     back where it could still be the start of a secret and released
//     masked (see Journal.append); subscribers then get the same text in
//     different pieces.
//   - An event may carry a Fence, the condition it is stored under: a
//     subagent run's lease (stored only while its writer owns the active
//     run) or a compare-and-append (stored only right after the number
//     its publisher read). The Log checks it in the same write as it
//     stores the event. A refused event is not numbered, stored or
//     delivered, its publisher gets ErrFenced at once (never retried),
//     and the events published after it are numbered on with no hole.
//     Hub.PublishWith stores events in the caller's own write instead
//     (a run's end with its last events).
//   - A journal in memory can be dropped (Hub.Forget) at any time; its
//     subscribers get ErrClosed after reading what it held, and the next
//     event or subscription opens a new one from the Log.
package event

import (
	"encoding/json"
	"time"
)

// Type is an event's kind. The audit types are those of DESIGN.md's audit
// log; the others are live-only and never written to the audit log.
type Type string

// Audit event types.
const (
	UserMessage      Type = "UserMessage"
	AssistantMessage Type = "AssistantMessage"
	ToolCall         Type = "ToolCall"
	ToolResult       Type = "ToolResult"
	SubagentSpawn    Type = "SubagentSpawn"
	SubagentComplete Type = "SubagentComplete"
	ExtendedThinking Type = "ExtendedThinking"
	CostUpdate       Type = "CostUpdate"
	Error            Type = "Error"
	SessionStart     Type = "SessionStart"
	SessionEnd       Type = "SessionEnd"
	// FindingPosted says a subagent posted a finding to its group's
	// board (post_finding; content: FindingContent), in the posting
	// subagent's own stream. It extends DESIGN.md's audit types, so
	// the audit log says what each member shared (docs/sharing.md).
	FindingPosted Type = "FindingPosted"
)

// Kept types that are not written to the audit log.
const (
	// SessionState says a main session's state changed (content: state).
	SessionState Type = "SessionState"
	// SubagentQueued says a subagent waits for a concurrency slot
	// (content: SubagentSpawnContent with its queue position); its
	// SubagentSpawn follows when it starts.
	SubagentQueued Type = "SubagentQueued"
	// SubagentResumed says a subagent whose process stopped was taken
	// over by another process and goes on from its last checkpoint
	// (content: SubagentSpawnContent with its attempt number).
	SubagentResumed Type = "SubagentResumed"
	// SpawnProposed says a spawn awaits the person's confirmation
	// (content: SpawnProposedContent). It is kept, so a panel or chat
	// that connects later still shows the question, but it is not an
	// audit type: DESIGN.md's audit types are fixed, and the spawn that
	// follows a yes is audited as SubagentSpawn.
	SpawnProposed Type = "SpawnProposed"
	// SpawnDecided says a proposal was confirmed, rejected or expired
	// (content: SpawnDecidedContent); kept, not audited, like
	// SpawnProposed.
	SpawnDecided Type = "SpawnDecided"
)

// Live-only event types.
const (
	// TextDelta is a streamed piece of the assistant's answer.
	TextDelta Type = "TextDelta"
	// ThinkingDelta is a streamed piece of extended thinking.
	ThinkingDelta Type = "ThinkingDelta"
	// Activity is a short human-readable note of what the agent is doing.
	Activity Type = "Activity"
	// Stalled says the agent has produced nothing for a while (content
	// says how long); it is not killed for it.
	Stalled Type = "Stalled"
	// Retry says a model call failed transiently and is being retried;
	// text streamed since the last turn boundary is void.
	Retry Type = "Retry"
	// SubagentProgress tells a parent how a long-running subagent is
	// doing (content: SubagentProgressContent).
	SubagentProgress Type = "SubagentProgress"
	// UserQuestion is a subagent's question to the person, in its parent
	// session (content: QuestionContent).
	UserQuestion Type = "UserQuestion"
	// QuestionAnswered closes a UserQuestion: the answer, or none within
	// the limit (content: AnsweredContent).
	QuestionAnswered Type = "QuestionAnswered"
)

// Kept reports whether events of type t are numbered and stored; the
// live-only types are not.
func (t Type) Kept() bool {
	switch t {
	case TextDelta, ThinkingDelta, Activity, Stalled, Retry, SubagentProgress:
		return false
	}
	return true
}

// AuditTypes lists the types written to the audit log.
var AuditTypes = []Type{UserMessage, AssistantMessage, ToolCall, ToolResult, SubagentSpawn,
	SubagentComplete, ExtendedThinking, CostUpdate, Error, SessionStart, SessionEnd, FindingPosted}

// IsAudit reports whether t belongs in the audit log.
func (t Type) IsAudit() bool {
	switch t {
	case UserMessage, AssistantMessage, ToolCall, ToolResult, SubagentSpawn, SubagentComplete,
		ExtendedThinking, CostUpdate, Error, SessionStart, SessionEnd, FindingPosted:
		return true
	}
	return false
}

// OrchestratorID is the agent ID of the orchestrator.
const OrchestratorID = "ava"

// Meta is an event's optional metadata, as in the audit log.
type Meta struct {
	InputTokens   int     `json:"inputTokens,omitempty"`
	OutputTokens  int     `json:"outputTokens,omitempty"`
	CostCents     float64 `json:"costCents,omitempty"`
	ModelID       string  `json:"modelId,omitempty"`
	ParentAgentID string  `json:"parentAgentId,omitempty"`
	DurationMs    int64   `json:"durationMs,omitempty"`
}

// Event is one step of one agent. Its JSON form is the audit log line of
// DESIGN.md, extended with "seq".
type Event struct {
	// Seq is the event's number in its session, assigned by Publish;
	// 0 for live-only events.
	Seq uint64
	// Time is when the event happened (UTC).
	Time time.Time
	// Session is the session key ("ava:cli:…", "ava:subagent:S-…").
	Session string
	// Agent is "ava" or a subagent ID.
	Agent string
	// User is the human user, when known.
	User string
	Type Type
	// Content is the event's JSON object; see the *Content types.
	Content json.RawMessage
	Meta    Meta
	// Fence is the condition the event is stored under (see Fence); the
	// zero Fence stores it unconditionally. It is a write's condition,
	// not part of the event: it is not in the event's JSON form, and the
	// hub clears it once the event is stored, so no sink or subscriber
	// sees it.
	Fence Fence
}

// Fence is the condition a kept event is stored under, checked in the
// same write as the event is stored (see Log.AppendEvents and
// Hub.Publish): a guarantee kept where every write passes, whether its
// publisher noticed anything or not.
type Fence struct {
	// Run and Owner fence an event of a subagent run (its own stream, or
	// its parent's SubagentSpawn): the event is stored only while the
	// instance Owner (the writer's lease epoch) owns the run whose full
	// ID is Run and the run is active (queued, pending or running). So a
	// process that lost the run's lease (another process took it over or
	// ended it, while this one was paused or cut off from the store)
	// adds nothing to the run's record, however long it held the event.
	// A refused event is not stored, numbered or delivered; its publisher
	// gets an error wrapping ErrFenced. Owner empty: no lease condition.
	Run, Owner string
	// Follows, when not 0, makes the event a compare-and-append: it is
	// stored only as the session's next number after Follows, the last
	// number its publisher read, so that of several processes that
	// decided on the same stream at once only the first writes (the
	// others get ErrFenced). The stream's primary key decides.
	Follows uint64
	// Until, when not nil, lets a leased event ride out a store outage
	// of any length: it is retried until it is stored, refused (the
	// lease decides, so waiting never lands it wrongly), or Until is
	// closed (its publisher is shutting down). Without it a failing
	// store is retried for the hub's outage bound (OutageBound). A run
	// thus pauses through an outage instead of ending (issue 39 item 5).
	Until <-chan struct{}
}

// Leased reports whether the fence carries a run's lease.
func (f Fence) Leased() bool { return f.Owner != "" }

// TimeLayout is the audit log's timestamp format: RFC 3339, UTC, ms.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// wire is the audit log form as encoding/json reads it (UnmarshalJSON);
// AppendJSON writes the same form directly.
type wire struct {
	Seq       uint64          `json:"seq,omitempty"`
	Timestamp string          `json:"timestamp"`
	SessionID string          `json:"sessionId"`
	AgentID   string          `json:"agentId"`
	UserID    string          `json:"userId,omitempty"`
	EventType Type            `json:"eventType"`
	Content   json.RawMessage `json:"content"`
	Metadata  Meta            `json:"metadata"`
}

// MarshalJSON writes the audit log form (see AppendJSON).
func (e Event) MarshalJSON() ([]byte, error) {
	b, err := e.AppendJSON(make([]byte, 0, e.encodedSize()))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// encodedSize is about the length of the event's JSON form: its
// variable parts and room for the rest.
func (e Event) encodedSize() int {
	return 200 + len(e.Session) + len(e.Agent) + len(e.User) + len(e.Type) + len(e.Content) +
		len(e.Meta.ModelID) + len(e.Meta.ParentAgentID)
}

// UnmarshalJSON reads the audit log form.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, w.Timestamp)
	if err != nil {
		return err
	}
	*e = Event{Seq: w.Seq, Time: t.UTC(), Session: w.SessionID, Agent: w.AgentID, User: w.UserID,
		Type: w.EventType, Content: w.Content, Meta: w.Metadata}
	return nil
}

// New returns an event of type t whose content is c marshalled to JSON.
// c must marshal (the *Content types always do).
func New(t Type, c any) Event {
	raw, err := json.Marshal(c)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"marshalError": err.Error()})
	}
	return Event{Type: t, Content: raw}
}

// Decode unmarshals the event's content into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Content, v) }

package event

import (
	"encoding/json"
	"time"

	"github.com/avaagent/ava/lifecycle"
)

// TextContent is the content of UserMessage, AssistantMessage, TextDelta,
// ThinkingDelta and Activity events.
type TextContent struct {
	Text string `json:"text"`
}

// ThinkingContent is the content of an ExtendedThinking event.
type ThinkingContent struct {
	Thinking string `json:"thinking"`
}

// ToolCallContent is the content of a ToolCall event.
type ToolCallContent struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ToolResultContent is the content of a ToolResult event.
type ToolResultContent struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Success bool   `json:"success"`
	Output  string `json:"output"`
}

// CostContent is the content of a CostUpdate event: this response's
// tokens and the run's totals so far.
type CostContent struct {
	InputTokens      int `json:"inputTokens"`
	OutputTokens     int `json:"outputTokens"`
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
	// WebSearches counts the provider's server-side searches in this
	// response, priced into CostCents.
	WebSearches    int     `json:"webSearches,omitempty"`
	CostCents      float64 `json:"costCents"`
	TotalTokens    int     `json:"totalTokens"`
	TotalCostCents float64 `json:"totalCostCents"`
	// Unpriced is set when the model has no known price.
	Unpriced bool `json:"unpriced,omitempty"`
}

// ErrorContent is the content of an Error event.
type ErrorContent struct {
	Error string `json:"error"`
	// Fatal is set when the error ended the run.
	Fatal bool `json:"fatal,omitempty"`
}

// SessionContent is the content of SessionStart and SessionEnd events.
type SessionContent struct {
	// Status is the run's final status (SessionEnd).
	Status lifecycle.Status `json:"status,omitempty"`
	// Spend is the session's spend so far, rolled up (an orchestrator
	// turn's SessionEnd).
	Spend *Spend `json:"spend,omitempty"`
	// Model is the model the session runs on.
	Model string `json:"model,omitempty"`
	// Offline is set when the model is the offline scripted one.
	Offline bool `json:"offline,omitempty"`
	// Instance is the process instance that runs an orchestrator turn
	// (SessionStart): a turn whose SessionStart has no SessionEnd is
	// ended as interrupted only once that instance is gone.
	Instance string `json:"instance,omitempty"`
	// Report is set on the SessionStart of a turn Ava started by itself
	// to report its background subagents' results to the person (no
	// message of theirs started it).
	Report bool `json:"report,omitempty"`
}

// Spend is a session's spend rolled up: its own (the orchestrator's
// turns), that of all its subagents, the total, and the total per model.
type Spend struct {
	Own       Usage        `json:"own"`
	Subagents Usage        `json:"subagents"`
	Total     Usage        `json:"total"`
	ByModel   []ModelSpend `json:"byModel,omitempty"`
}

// Usage is tokens and cost.
type Usage struct {
	Tokens    int     `json:"tokens"`
	CostCents float64 `json:"costCents"`
	// CachedTokens are the tokens of Tokens the provider read from its
	// prompt cache (billed at the cache-read rate).
	CachedTokens int `json:"cachedTokens,omitempty"`
}

// ModelSpend is a session's spend on one model (own and subagents').
type ModelSpend struct {
	Model string `json:"model"`
	Usage
}

// add adds v to u.
func (u *Usage) add(v Usage) {
	u.Tokens += v.Tokens
	u.CostCents += v.CostCents
	u.CachedTokens += v.CachedTokens
}

// Add adds one source's spend on a model to the roll-up.
func (s *Spend) Add(subagents bool, model string, u Usage) {
	part := &s.Own
	if subagents {
		part = &s.Subagents
	}
	part.add(u)
	s.Total.add(u)
	for i := range s.ByModel {
		if s.ByModel[i].Model == model {
			s.ByModel[i].add(u)
			return
		}
	}
	s.ByModel = append(s.ByModel, ModelSpend{Model: model, Usage: u})
}

// SubagentSpawnContent is the content of a SubagentSpawn or
// SubagentQueued event. The event's time is when the run started (or
// joined the queue).
type SubagentSpawnContent struct {
	SubagentID string `json:"subagentId"`
	Role       string `json:"role"`
	Task       string `json:"task"`
	Model      string `json:"model"`
	Mode       string `json:"mode"`
	// QueuePosition is the run's place in the queue (SubagentQueued).
	QueuePosition int `json:"queuePosition,omitempty"`
	// Attempt is the resume attempt, 1 for the first (SubagentResumed).
	Attempt int `json:"attempt,omitempty"`
	// Summary says what the resume does (SubagentResumed).
	Summary string `json:"summary,omitempty"`
	// FollowUp marks the SubagentSpawn of a follow-up turn of a run that
	// had ended (a message sent to it): the start of that turn, which
	// its own subagent:start lifecycle entry records (seed 002: a start
	// before each complete).
	FollowUp bool `json:"followUp,omitempty"`
}

// SubagentCompleteContent is the content of a SubagentComplete event.
type SubagentCompleteContent struct {
	SubagentID string           `json:"subagentId"`
	Role       string           `json:"role"`
	Status     lifecycle.Status `json:"status"`
	Summary    string           `json:"summary"`
	Tokens     int              `json:"tokens"`
	CostCents  float64          `json:"costCents"`
	DurationMs int64            `json:"durationMs"`
	Iterations int              `json:"iterations"`
	// StartedAt is when the run (or the follow-up turn) started; the
	// event's time is when it ended.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Model is the model the run used.
	Model string `json:"model,omitempty"`
	// Mode is single, parallel or chain.
	Mode             string `json:"mode,omitempty"`
	InputTokens      int    `json:"inputTokens,omitempty"`
	OutputTokens     int    `json:"outputTokens,omitempty"`
	CacheReadTokens  int    `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int    `json:"cacheWriteTokens,omitempty"`
	// Output is the run's output (JSON, or a JSON string for text), as
	// its result carries it; OutputFormat is json, text or none.
	Output       json.RawMessage `json:"output,omitempty"`
	OutputFormat string          `json:"outputFormat,omitempty"`
	// Attempt is how many times the run was resumed after its process
	// stopped (0: never).
	Attempt int `json:"attempt,omitempty"`
	// WebSearches counts the provider's searches of this turn (priced
	// into the cost).
	WebSearches int `json:"webSearches,omitempty"`
	// Citations are the sources the run's answer cites.
	Citations []Citation `json:"citations,omitempty"`
}

// Citation is a source an answer cites: a page and the text of it the
// claim rests on.
type Citation struct {
	URL       string `json:"url"`
	Title     string `json:"title,omitempty"`
	CitedText string `json:"citedText,omitempty"`
}

// FindingContent is the content of a FindingPosted event: the finding
// as the board stored it (masked, bounded).
type FindingContent struct {
	// FindingID is the board's ID of the finding (read_findings' since).
	FindingID int64 `json:"findingId"`
	// GroupID is the group whose board it is on.
	GroupID    string `json:"groupId"`
	SubagentID string `json:"subagentId"`
	Role       string `json:"role"`
	Text       string `json:"text"`
}

// SubagentProgressContent is the content of a SubagentProgress event.
type SubagentProgressContent struct {
	SubagentID string  `json:"subagentId"`
	Role       string  `json:"role"`
	Activity   string  `json:"activity,omitempty"`
	ElapsedMs  int64   `json:"elapsedMs"`
	Tokens     int     `json:"tokens"`
	CostCents  float64 `json:"costCents"`
	Stalled    bool    `json:"stalled,omitempty"`
}

// StalledContent is the content of a Stalled event.
type StalledContent struct {
	IdleMs int64 `json:"idleMs"`
}

// RetryContent is the content of a Retry event.
type RetryContent struct {
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
}

// StateContent is the content of a SessionState event.
type StateContent struct {
	// State is idle, running or waiting_for_subagents.
	State string `json:"state"`
}

// SpawnEstimate is a proposed spawn's estimate: a time range in seconds,
// a maximum cost, the model and tools, and what it was learned from
// (basis "limits", or "history" of Runs past runs).
type SpawnEstimate struct {
	MinSeconds       int      `json:"minSeconds"`
	MaxSeconds       int      `json:"maxSeconds"`
	TypicalSeconds   int      `json:"typicalSeconds,omitempty"`
	MaxCostCents     float64  `json:"maxCostCents"`
	TypicalCostCents float64  `json:"typicalCostCents,omitempty"`
	Model            string   `json:"model"`
	Tools            []string `json:"tools"`
	Basis            string   `json:"basis"`
	Runs             int      `json:"runs,omitempty"`
}

// SpawnProposedContent is the content of a SpawnProposed event. A group
// is one proposal: Role and Task join its members', Tasks lists them,
// and the estimate is the group's total.
type SpawnProposedContent struct {
	PendingID string `json:"pendingId"`
	// Kind is spawn (subagents; Role and Task name them) or process (a
	// long tool call of the orchestrator's: Role is the tool, Task the
	// command).
	Kind      string        `json:"kind,omitempty"`
	Role      string        `json:"role"`
	Task      string        `json:"task"`
	Mode      string        `json:"mode"`
	Tasks     []string      `json:"tasks,omitempty"`
	Estimate  SpawnEstimate `json:"estimate"`
	Rationale string        `json:"rationale,omitempty"`
	ExpiresAt time.Time     `json:"expiresAt"`
	// Text is the proposal as shown to the person.
	Text string `json:"text"`
}

// SpawnDecidedContent is the content of a SpawnDecided event.
type SpawnDecidedContent struct {
	PendingID string `json:"pendingId"`
	// Decision is confirmed, rejected or expired.
	Decision string `json:"decision"`
	// Change is the person's modification, as shown ("model haiku").
	Change      string   `json:"change,omitempty"`
	SubagentIDs []string `json:"subagentIds,omitempty"`
}

// QuestionContent is the content of a UserQuestion event.
type QuestionContent struct {
	QuestionID string    `json:"questionId"`
	SubagentID string    `json:"subagentId"`
	Role       string    `json:"role"`
	Question   string    `json:"question"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// AnsweredContent is the content of a QuestionAnswered event.
type AnsweredContent struct {
	QuestionID string `json:"questionId"`
	SubagentID string `json:"subagentId"`
	Role       string `json:"role"`
	// Answer is the person's answer, "" when none came.
	Answer string `json:"answer,omitempty"`
	// By is "person", "orchestrator" (AVA_ASK_ANSWERS), "timeout" when
	// no answer came in time, or "cancelled" when the run ended first.
	By string `json:"by"`
}

package observe

import (
	"time"

	"github.com/avaagent/ava/lifecycle"
)

// Run names one subagent run: what a hook needs to find it and its
// parent.
type Run struct {
	// RunID is the run's full ID (a UUID); SubagentID its short form
	// (S-xxxxxx).
	RunID      string
	SubagentID string
	// Session is the run's own session key (ava:subagent:S-xxxxxx),
	// Parent the session that spawned it ("" for none), ParentAgent the
	// agent that did.
	Session     string
	Parent      string
	ParentAgent string
	Role        string
	// Mode is single, parallel or chain; GroupID is set for a member of
	// a group.
	Mode    string
	GroupID string
	// Attempt is how often the run was resumed after its process stopped
	// (0: never).
	Attempt int
}

// Figures are what a run used and how long it took, over all its turns
// (its first task and every follow-up and steer): the one definition of
// a run's figures that every surface shows (ava.Figures) and the
// notices carry: a subagent's notices carry the run's figures as of
// that end; a main session's TurnEnded carries the turn's.
type Figures struct {
	// Iterations counts the agent loop's model calls.
	Iterations int `json:"iteration"`
	// Tokens counts input and output tokens.
	Tokens int `json:"tokens"`
	// CostCents is what the tokens cost.
	CostCents float64 `json:"costCents"`
	// Elapsed is the time the run spent working: the sum of its turns,
	// without the time it was idle between them or queued for a slot
	// (in JSON, nanoseconds; the HTTP API's elapsedMs is the same figure).
	Elapsed time.Duration `json:"elapsedNs"`
	// Wall is the time from its first start to its last end (or to now
	// while it runs), idle time included: what a timeline bar spans.
	Wall time.Duration `json:"wallNs"`
}

// RunStarted: a run is running for the first time in this process — a
// new run (also one that waited in the queue) or one resumed after its
// process stopped (Resumed). Sent after the store recorded it running.
type RunStarted struct {
	Run
	Resumed bool
	Time    time.Time
}

// RunEnded: a run's first turn ended (or the run ended without one: it
// was cancelled in the queue, or recovery ended it interrupted). Sent
// after the store recorded the final status. A follow-up's end is a
// TurnEnded.
type RunEnded struct {
	Run
	Status lifecycle.Status
	// Error is why a run that did not succeed ended, if known.
	Error string
	Figures
	Time time.Time
}

// TurnEnded: a main session's turn ended, or a subagent's follow-up turn
// (RunID and SubagentID set; its end is recorded in the store first).
type TurnEnded struct {
	// Session is the session the turn ran in; Parent, for a subagent's
	// turn, the session that spawned it.
	Session    string
	Parent     string
	RunID      string
	SubagentID string
	Role       string
	// Turn counts a subagent's turns (2 for its first follow-up); 0 for
	// a main session.
	Turn   int
	Status lifecycle.Status
	Error  string
	// Report marks a main session's turn Ava started by itself to report
	// its background subagents' results (on_complete), and Text is that
	// turn's answer, masked: a channel whose person wrote nothing shows
	// it (their own turns' answers reach them through the turn).
	Report bool
	Text   string
	Figures
	Time time.Time
}

// Decision is how a proposal was decided.
type Decision string

// Decisions.
const (
	Confirmed Decision = "confirmed"
	Rejected  Decision = "rejected"
	// Modified is confirmed with a change (ProposalDecided.Change).
	Modified Decision = "modified"
	Expired  Decision = "expired"
)

// Who decided a proposal.
const (
	ByPerson = "person"
	// ByExpiry: no one answered before the proposal expired.
	ByExpiry = "expiry"
)

// ProposalMade: a spawn awaits the person's decision (pending ID
// P-xxxxxx). Sent after the proposal is stored.
type ProposalMade struct {
	ProposalID string
	// Session is the parent session the proposal was made in.
	Session string
	Role    string
	Mode    string
	Task    string
	// MaxCostCents is the estimate's upper bound.
	MaxCostCents float64
	ExpiresAt    time.Time
	Time         time.Time
}

// ProposalDecided: a proposal was confirmed, modified, rejected or
// expired. Sent after the decision is stored.
type ProposalDecided struct {
	ProposalID string
	Session    string
	Role       string
	Decision   Decision
	// Change is what a Modified decision changed.
	Change string
	// By is ByPerson or ByExpiry.
	By string
	// SubagentIDs are the runs a confirmation started, GroupID their
	// group's ID when there are several.
	SubagentIDs []string
	GroupID     string
	Time        time.Time
}

// QuestionAsked: a subagent asked the person a question (ask_user); it
// is in its parent session's stream.
type QuestionAsked struct {
	QuestionID string
	// Session is the parent session the question is put in.
	Session    string
	RunID      string
	SubagentID string
	Role       string
	Text       string
	ExpiresAt  time.Time
	Time       time.Time
}

// QuestionAnswered: a question was closed: answered by the person or the
// orchestrator, or given up (By "timeout" or "cancelled").
type QuestionAnswered struct {
	QuestionID string
	Session    string
	RunID      string
	SubagentID string
	Role       string
	Answer     string
	By         string
	Time       time.Time
}

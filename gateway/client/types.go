package client

import (
	"encoding/json"
	"time"
)

// SessionKeyHeader carries the session key of a POST /api/chat stream,
// also given in its first event (EventSession).
const SessionKeyHeader = "X-Ava-Session-Key"

// Names of the events the daemon adds to a turn's stream. They carry no
// id: they are not events of the session, so resuming stays exact.
const (
	// EventSession opens a POST /api/chat stream: data is a ChatStart.
	EventSession = "session"
	// EventDone closes a POST /api/chat stream: data is a TurnResult.
	EventDone = "done"
)

// ChatRequest is the body of POST /api/chat.
type ChatRequest struct {
	// SessionKey is the session to send to; empty starts a new main
	// session ava:web:<id>.
	SessionKey string `json:"sessionKey,omitempty"`
	Message    string `json:"message"`
	// Queue delivers the message when the running turn ends instead of
	// refusing it with 409.
	Queue bool `json:"queue,omitempty"`
	// Steer delivers a message to a running subagent into its
	// conversation before its next model call, without cancelling it; a
	// finished subagent gets it as a follow-up. Subagent keys only.
	Steer bool `json:"steer,omitempty"`
	// Attachments are the IDs of files attached to the message (POST
	// /api/attachments): given to the model with it, text inline and
	// other files in the workspace.
	Attachments []string `json:"attachments,omitempty"`
}

// Attachment is a file attached to a message (POST /api/attachments).
type Attachment struct {
	// ID is "A-" and 12 hex digits; a message names it.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Type is its media type; Kind is text, image or file (PDF).
	Type      string    `json:"type"`
	Kind      string    `json:"kind"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"createdAt"`
}

// AttachResponse answers POST /api/attachments.
type AttachResponse struct {
	Attachments []Attachment `json:"attachments"`
}

// ChatStart is the data of a turn stream's first event.
type ChatStart struct {
	SessionKey string `json:"sessionKey"`
	// Queued is set when the message waits for a running turn.
	Queued bool `json:"queued"`
	// Replayed is set when the message came before under its
	// Idempotency-Key and was not sent again: the stream is the first
	// message's turn, from where it began.
	Replayed bool `json:"replayed,omitempty"`
}

// StatusReplayed is the status of the done event that answers a
// repeated message (Idempotency-Key) whose turn the daemon no longer
// runs or keeps: the message was sent once, and its answer is in the
// session's stream.
const StatusReplayed = "replayed"

// TurnResult is how a turn ended (data of EventDone).
type TurnResult struct {
	Status     string  `json:"status"`
	Text       string  `json:"text"`
	Session    string  `json:"session"`
	Model      string  `json:"model,omitempty"`
	Tokens     Tokens  `json:"tokens"`
	CostCents  float64 `json:"cost_cents"`
	DurationMs int64   `json:"duration_ms"`
	Iterations int     `json:"iterations"`
	Offline    bool    `json:"offline,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// Tokens is a turn's token breakdown.
type Tokens struct {
	Input  int `json:"input"`
	Output int `json:"output"`
	Total  int `json:"total"`
}

// StopRequest is the body of POST /api/chat/stop.
type StopRequest struct {
	SessionKey string `json:"sessionKey"`
}

// StopResponse says what a stop did.
type StopResponse struct {
	SessionKey string `json:"sessionKey"`
	// Stopped is set when something was running and was stopped.
	Stopped bool `json:"stopped"`
}

// Subagent is one subagent run as the daemon reports it: the live status
// of a run this daemon holds, else its stored record.
type Subagent struct {
	ID         string `json:"id"`
	SessionKey string `json:"sessionKey"`
	Role       string `json:"role"`
	Task       string `json:"task"`
	Model      string `json:"model"`
	Mode       string `json:"mode,omitempty"`
	Parent     string `json:"parent,omitempty"`
	// GroupID is the parallel group or chain it is a member of; its
	// board is GET /api/groups/{groupId}/findings.
	GroupID string `json:"groupId,omitempty"`
	Status  string `json:"status"`
	// QueuePosition is a queued run's place in line for a slot (1 for
	// the next to start); 0 when it is not queued here.
	QueuePosition int  `json:"queuePosition,omitempty"`
	Stalled       bool `json:"stalled,omitempty"`
	// WaitingForUser is set while it waits for the person's answer to its
	// question (ask_user; GET /api/questions).
	WaitingForUser bool `json:"waitingForUser,omitempty"`
	// Iteration, Tokens and CostCents are the run's model calls, tokens
	// and cost over all its turns (its first and its follow-ups).
	Iteration int     `json:"iteration"`
	Tokens    int     `json:"tokens"`
	CostCents float64 `json:"costCents"`
	// ElapsedMs is the run's active time: the time it spent running,
	// summed over its turns, without the idle time between them or its
	// wait in the queue; what ava ps and ava status show as elapsed.
	ElapsedMs int64 `json:"elapsedMs"`
	// WallMs is its wall time: from its first start to its last end, or
	// to now while it is active.
	WallMs    int64     `json:"wallMs"`
	Activity  string    `json:"activity,omitempty"`
	LastTool  string    `json:"lastTool,omitempty"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Result is the subagent's structured result once it ended.
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	// Attempts counts the times the run was resumed by another process
	// after its own died (AVA_RESUME_ATTEMPTS bounds it).
	Attempts int `json:"attempts,omitempty"`
	// Live is set when this daemon runs or holds the subagent.
	Live bool `json:"live"`
	// Waits are the times it waited for the person (ask_user), the open
	// one last.
	Waits []Wait `json:"waits,omitempty"`
}

// Wait is a time a subagent waited for the person: one question, from
// when it was asked to when it was answered or closed.
type Wait struct {
	QuestionID string    `json:"questionId"`
	AskedAt    time.Time `json:"askedAt"`
	// AnsweredAt is zero while it waits.
	AnsweredAt time.Time `json:"answeredAt,omitzero"`
	// By is person, orchestrator, timeout or cancelled; "" while it
	// waits.
	By string `json:"by,omitempty"`
}

// SubagentList is the body of GET /api/subagents.
type SubagentList struct {
	Subagents []Subagent `json:"subagents"`
}

// Finding is one entry of a group's board: what a member shared with
// the others (post_finding). Its text is another agent's: untrusted.
type Finding struct {
	// ID increases in the order the group's findings were posted.
	ID         int64     `json:"id"`
	SubagentID string    `json:"subagentId"`
	Role       string    `json:"role"`
	Text       string    `json:"text"`
	PostedAt   time.Time `json:"postedAt"`
}

// FindingList is the body of GET /api/groups/{id}/findings: the
// group's board, oldest first.
type FindingList struct {
	GroupID  string    `json:"groupId"`
	Findings []Finding `json:"findings"`
}

// SpawnRequest is the body of POST /api/subagents: one background
// subagent. Zero limits take the role's.
type SpawnRequest struct {
	Role    string `json:"role"`
	Task    string `json:"task"`
	Context string `json:"context,omitempty"`
	Model   string `json:"model,omitempty"`
	// TimeoutSeconds is the wall-clock limit.
	TimeoutSeconds float64 `json:"timeoutSeconds,omitempty"`
	MaxCostCents   float64 `json:"maxCostCents,omitempty"`
	MaxTokens      int     `json:"maxTokens,omitempty"`
	MaxIterations  int     `json:"maxIterations,omitempty"`
	// Parent is the main session the result is announced to (its next
	// prompt holds it); empty: none.
	Parent string `json:"parent,omitempty"`
	// User is who asked, when known.
	User string `json:"user,omitempty"`
	// Rationale is why, shown in a proposal.
	Rationale string `json:"rationale,omitempty"`
}

// SpawnAnswer is the answer of POST /api/subagents: the subagent (201),
// or, when the confirmation policy asks for it, only Pending, the
// proposal awaiting the person (202).
type SpawnAnswer struct {
	Subagent
	Pending *Proposal `json:"pending,omitempty"`
}

// Session is one main session and its state.
type Session struct {
	Key string `json:"key"`
	// Title is what a menu shows: the first message's first line, cut,
	// or what the person renamed it to; "" before the first message.
	Title string `json:"title"`
	// State is idle, running or waiting_for_subagents.
	State       string    `json:"state"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	SpentCents  float64   `json:"spentCents"`
	BudgetCents float64   `json:"budgetCents,omitempty"`
	// RunningSubagents counts the subagents it started that still run.
	RunningSubagents int `json:"runningSubagents"`
	// Spend is what the session spent: its own turns, all its subagents,
	// the total, and per model.
	Spend Spend `json:"spend"`
}

// Spend is a session's spend rolled up.
type Spend struct {
	Own       Usage        `json:"own"`
	Subagents Usage        `json:"subagents"`
	Total     Usage        `json:"total"`
	ByModel   []ModelSpend `json:"byModel,omitempty"`
}

// Usage is tokens and cost in cents.
type Usage struct {
	Tokens    int     `json:"tokens"`
	CostCents float64 `json:"costCents"`
	// CachedTokens are the tokens of Tokens read from the provider's
	// prompt cache.
	CachedTokens int `json:"cachedTokens,omitempty"`
}

// ModelSpend is the spend on one model.
type ModelSpend struct {
	Model        string  `json:"model"`
	Tokens       int     `json:"tokens"`
	CostCents    float64 `json:"costCents"`
	CachedTokens int     `json:"cachedTokens,omitempty"`
}

// RenameRequest is the body of PATCH /api/sessions/{key}.
type RenameRequest struct {
	// Title is the session's new title: one line, 1 to 120 characters.
	Title string `json:"title"`
}

// SessionList is the body of GET /api/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// LogList is the body of GET /api/logs: the matching audit lines as
// stored, oldest first, and the lines the reader skipped.
type LogList struct {
	Entries []json.RawMessage `json:"entries"`
	Skipped []string          `json:"skipped,omitempty"`
}

// Health is the body of GET /healthz.
type Health struct {
	Status string `json:"status"`
	// Offline is set when the orchestrator's model is the offline
	// scripted one.
	Offline  bool   `json:"offline"`
	Model    string `json:"model,omitempty"`
	Draining bool   `json:"draining,omitempty"`
	// Version is the daemon's Ava version (ava --version): v1.2.3, or
	// "dev" for a build from a checkout.
	Version string `json:"version"`
}

// ErrorBody is every error response's body.
type ErrorBody struct {
	Error string `json:"error"`
}

// MCPServer is one MCP server roles use, as the daemon sees it (GET
// /api/mcp/servers).
type MCPServer struct {
	Name string `json:"name"`
	// Kind is "stdio" or "url"; Target the command line or the URL.
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// State is "not started", "running", "stopped (idle)", "exited
	// (restarts on next use)", "failed" or "closed".
	State string `json:"state"`
	// PID is a running stdio server's process ID.
	PID int `json:"pid,omitempty"`
	// Tools are the offered tools' names once it ran; Withheld the tools
	// it listed that are not offered, with why.
	Tools    []string `json:"tools,omitempty"`
	Withheld []string `json:"withheld,omitempty"`
	// Starts counts its starts; Error is its last failure.
	Starts int    `json:"starts"`
	Error  string `json:"error,omitempty"`
	// Roles are the roles using it.
	Roles []string `json:"roles,omitempty"`
	// Confinement says how a stdio server runs: sandboxed (with or
	// without network) or UNSANDBOXED and why.
	Confinement string `json:"confinement,omitempty"`
}

// MCPServerList is the body of GET /api/mcp/servers.
type MCPServerList struct {
	Servers []MCPServer `json:"servers"`
}

// Hook is a lifecycle hook of the daemon (GET /api/hooks).
type Hook struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Target is what the hook reaches, as shown: the command line, or a
	// URL's scheme and host only ("https://hooks.slack.com/…"): a
	// webhook's path and query are often its credential.
	Target string   `json:"target"`
	Events []string `json:"events"`
	// From is where it is defined: "config.yaml" or "role <name>".
	From string `json:"from"`
}

// HookDelivery is one event's delivery to one hook.
type HookDelivery struct {
	// ID is the delivery's ID (a UUIDv7): what the hook receives as
	// X-Ava-Delivery (a command as AVA_HOOK_DELIVERY), on every attempt,
	// and never another delivery's, even in another database.
	ID     string `json:"id"`
	HookID string `json:"hookId"`
	Kind   string `json:"kind"`
	// Target is the hook's target as shown (as Hook's), from the
	// daemon's configuration by HookID (the store keeps no URL); empty
	// when the daemon has no hook of that ID any more.
	Target string `json:"target"`
	Event  string `json:"event"`
	// SessionKey and Seq name the event in its session's stream.
	SessionKey string `json:"sessionKey"`
	Seq        uint64 `json:"seq"`
	// RunID is the subagent run the event belongs to (its short ID),
	// empty for a session's own events: a hook gets one run's events in
	// order.
	RunID string `json:"runId,omitempty"`
	// Status is pending, failed, dead or delivered.
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	MaxAttempts int        `json:"maxAttempts"`
	NextAt      time.Time  `json:"nextAt"`
	LastError   string     `json:"lastError,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	DeliveredAt *time.Time `json:"deliveredAt,omitempty"`
	// Body is the event JSON sent to the hook.
	Body json.RawMessage `json:"body"`
}

// HookList is the body of GET /api/hooks.
type HookList struct {
	Hooks      []Hook         `json:"hooks"`
	Deliveries []HookDelivery `json:"deliveries"`
}

// HookRetryRequest is the body of POST /api/hooks/retry: the deliveries
// to send again, by ID or a unique prefix of one (none: every failed
// and dead one).
type HookRetryRequest struct {
	IDs []string `json:"ids,omitempty"`
}

// LoginHeader carries the web panel's second secret: a request that
// comes with the panel's session cookie is refused unless it also sends
// the secret its login answered (LoginResult.Secret) in this header.
// The panel keeps it in the tab's sessionStorage, which only pages of
// the daemon's own origin (scheme, host and port) can read, whereas a
// browser sends a host's cookies to all its ports. Clients with the
// token send it as a bearer token instead and need neither.
const LoginHeader = "X-Ava-Login"

// LoginRequest is the body of POST /api/login: empty when the request
// carries the token as a bearer token, else the one-time code of a login
// link (ava serve, ava panel).
type LoginRequest struct {
	Code string `json:"code,omitempty"`
}

// LoginResult answers POST /api/login, beside the session cookie it
// sets.
type LoginResult struct {
	LoggedIn bool `json:"loggedIn"`
	// ID names the login (L-xxxxxxxxxxxx) in GET /api/logins.
	ID string `json:"id"`
	// Secret goes with the cookie on every call, in LoginHeader.
	Secret string `json:"secret"`
	// ExpiresAt is when the login ends unless it is used before; each
	// use moves it (see docs/security.md).
	ExpiresAt time.Time `json:"expiresAt"`
}

// PanelLogin is one browser logged in to the web panel (GET
// /api/logins).
type PanelLogin struct {
	ID        string    `json:"id"`
	UserAgent string    `json:"userAgent"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Current marks the login the request itself came with.
	Current bool `json:"current"`
}

// PanelLoginList answers GET /api/logins: the logins not expired,
// newest first.
type PanelLoginList struct {
	Logins []PanelLogin `json:"logins"`
}

// Revoked answers DELETE /api/logins and DELETE /api/logins/{id}.
type Revoked struct {
	Revoked int `json:"revoked"`
}

// LoggedOut answers POST /api/logout.
type LoggedOut struct {
	// LoggedOut is set when the request came with a panel login, which
	// is now revoked; a request with the token has none to end.
	LoggedOut bool `json:"loggedOut"`
}

// Package store defines Ava's durable record: sessions, their messages,
// subagent runs, pending spawns awaiting confirmation, and long-term
// memory. The types and the Store interface live here; each backend is a
// subpackage (store/sqlite), and store/storetest is the conformance suite
// every backend must pass.
//
// Concurrency rules every backend keeps:
//   - All methods are safe for concurrent use by any number of goroutines;
//     concurrent writers are serialised by the backend and never see a
//     "database is busy" error.
//   - TransitionRun is a compare-and-set: it changes a run's status only if
//     the current status is one of from, atomically. When cancellation
//     races completion, exactly one of the two transitions wins and the
//     other gets ErrInvalidTransition naming the status that won, so a run
//     never ends twice and never flips from cancelled to success.
//   - Every write to a run carries its writer's owner (the instance ID,
//     which is also the lease's epoch: a process that lost its lease
//     registers again under a new ID). TransitionRun and CheckpointRun
//     apply it in the same statement as the write: a run that is active
//     is changed only by its owner, else the write stores nothing and
//     returns ErrStaleOwner. So a process paused past its lease, whose
//     runs another took over or ended, cannot overwrite them. Event
//     appends carry it too (event.Fence): the events of a run's stream
//     are stored only while their writer owns the run and it is active,
//     checked in the append's own transaction, else the append stores
//     nothing (event.ErrFenced with ErrStaleOwner or
//     ErrInvalidTransition); the run's last events are written by the
//     write that ends it (RunFinish.Events).
//   - AnnounceResult delivers a finished run's result into its parent's
//     messages exactly once, even when called concurrently or again after a
//     restart: the message insert and the announced flag commit together.
package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/lifecycle"
)

// Session is one conversation: a main session (ava:cli:<id>, ava:web:<id>,
// …) or a subagent's own session (ava:subagent:S-xxxxxx).
type Session struct {
	Key string
	// Title is what the sessions menu shows: the first user message's
	// first line, cut (TitleFrom), or what the person renamed it to; ""
	// until a user message is stored.
	Title     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// BudgetCents is the session's spending cap; 0 means none.
	BudgetCents float64
	// SpentCents is what the session has spent so far.
	SpentCents float64
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSubagent  = "subagent"
)

// Message senders shown to the person.
const (
	SenderUser     = "user"
	SenderAva      = "ava"
	SenderSubagent = "[Subagent]"
)

// Message is one entry of a session's history.
type Message struct {
	// ID is assigned by the store and increases with insertion order.
	ID         int64
	SessionKey string
	// Role is RoleUser, RoleAssistant or RoleSubagent.
	Role string
	// Sender is the display name: SenderUser, SenderAva, SenderSubagent.
	Sender string
	// Text is the plain text used for display and search.
	Text string
	// Blocks is the full provider-neutral message (llm.Message JSON),
	// stored as given and opaque to the store.
	Blocks json.RawMessage
	// RunID names the run whose result this message carries, if any.
	RunID     string
	CreatedAt time.Time
	// Idempotency, when set (not stored in the message), is the
	// idempotency key of the request that sent it (a person's message to
	// a main session, POST /api/chat): AppendMessage and AppendMessages
	// record it in the same transaction, with the session key as its
	// Result unless it names one, or record nothing and fail with
	// ErrKeyUsed when the key is recorded already.
	Idempotency *Idempotency
}

// Spawn modes of a run.
const (
	ModeSingle   = "single"
	ModeParallel = "parallel"
	ModeChain    = "chain"
)

// ValidMode reports whether m is a spawn mode.
func ValidMode(m string) bool { return m == ModeSingle || m == ModeParallel || m == ModeChain }

// SubagentSessionPrefix starts every subagent session key; the short ID
// follows it.
const SubagentSessionPrefix = "ava:subagent:"

var shortIDPattern = lazyre.New(`^S-[0-9a-f]{6}$`)

// ValidShortID reports whether s has the form S-xxxxxx (six lowercase hex
// characters).
func ValidShortID(s string) bool { return shortIDPattern().MatchString(s) }

// Run is one subagent run: its spawn record, its live counters and how it
// ended.
type Run struct {
	// ID is the full UUID.
	ID string
	// ShortID is "S-" and six lowercase hex characters, unique in a store.
	ShortID string
	// SessionKey is the run's own session, "ava:subagent:" + ShortID.
	SessionKey    string
	ParentSession string
	ParentAgent   string
	// GroupID links the runs of one parallel or chain spawn.
	GroupID string
	Mode    string
	Role    string
	Task    string
	Model   string
	Config  json.RawMessage
	Status  lifecycle.Status
	Result  json.RawMessage
	Error   string
	// Tokens, CostCents and Iterations are the run's figures over all
	// its turns (its first and its follow-ups), as of its last end or
	// checkpoint.
	Tokens     int
	CostCents  float64
	Iterations int
	// Active is the time the run spent running, summed over its ended
	// turns: without the idle time between turns or the time it waited
	// in the queue (its running turn's time is since TurnStartedAt).
	Active    time.Duration
	CreatedAt time.Time
	// StartedAt is set when the run first becomes running.
	StartedAt *time.Time
	// TurnStartedAt is when its current (or last) turn started running;
	// it defaults to StartedAt.
	TurnStartedAt *time.Time
	// EndedAt is set when the run reaches a final status.
	EndedAt *time.Time
	// Announced is set once the result was delivered to the parent.
	Announced bool
	// Owner is the instance (process) running it; "" for runs recorded
	// before owners were, which no live instance owns.
	Owner string
	// Attempts counts the times the run was resumed by another process
	// after its own stopped (see OwnerStore.RecoverOwner).
	Attempts int
	// Idempotency, when set (CreateRun only, not stored in the run),
	// is the idempotency key of the request that made the run:
	// CreateRun records it in the same transaction, with the run's
	// ShortID as its Result, or records nothing and fails with
	// ErrKeyUsed when the key is recorded already.
	Idempotency *Idempotency
}

// Instance is one process that runs subagents, with the lease it keeps
// by heartbeat. Another process may end an instance's active runs as
// interrupted only once the instance is gone (see package instance).
type Instance struct {
	ID          string
	Host        string
	PID         int
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// ChannelUpdate is one update a chat channel received (a Telegram
// update), kept until it is handled.
type ChannelUpdate struct {
	ID      int64
	ChatID  int64
	Payload json.RawMessage
}

// ChannelStore keeps what a chat channel received, so that a restart
// neither loses an update nor handles one twice.
type ChannelStore interface {
	// SaveUpdates stores updates not stored before (the others are
	// ignored) in one transaction and returns the ones that were new.
	SaveUpdates(ctx context.Context, channel string, ups []ChannelUpdate) ([]ChannelUpdate, error)
	// PendingUpdates returns the stored updates not yet handled, in order.
	PendingUpdates(ctx context.Context, channel string) ([]ChannelUpdate, error)
	// UpdateHandled marks an update handled.
	UpdateHandled(ctx context.Context, channel string, id int64) error
	// NextUpdate is one past the highest update ID stored (0 if none):
	// where the channel resumes.
	NextUpdate(ctx context.Context, channel string) (int64, error)
	// FirstRefusal records that chat was refused on day (YYYY-MM-DD) and
	// reports whether this is the first time that day.
	FirstRefusal(ctx context.Context, channel string, chat int64, day string) (bool, error)
	// ChatSession is the session key a chat was moved to ("" if none).
	ChatSession(ctx context.Context, channel string, chat int64) (string, error)
	// SetChatSession moves a chat to another session key.
	SetChatSession(ctx context.Context, channel string, chat int64, key string) error
}

// OwnerStore records instances and ends the runs of dead ones.
type OwnerStore interface {
	// RegisterInstance stores a new instance (or replaces one with its ID).
	RegisterInstance(ctx context.Context, in Instance) error
	// Heartbeat moves the instance's heartbeat to at. It returns
	// ErrNotFound when the instance was removed (declared dead).
	Heartbeat(ctx context.Context, id string, at time.Time) error
	// RemoveInstance forgets the instance (at a clean shutdown).
	RemoveInstance(ctx context.Context, id string) error
	// Instances returns every registered instance.
	Instances(ctx context.Context) ([]Instance, error)
	// InterruptOwner ends every active (queued, pending or running) run owned by owner as
	// interrupted at at and removes the instance, in one transaction. It
	// returns the runs it ended, as they are now.
	InterruptOwner(ctx context.Context, owner string, at time.Time) ([]Run, error)
	// RecoverOwner is InterruptOwner, except for the runs t.Resume picks
	// that were resumed fewer than t.MaxAttempts times: those keep their
	// status and move to t.Owner with Attempts one higher (a takeover, not
	// a status change). A picked run resumed t.MaxAttempts times already
	// is interrupted with QuarantinedError (quarantined). One transaction,
	// which also removes the instance, so that two processes recovering
	// at once take over or end each run once. It returns the runs it took
	// over and those it ended, as they are now.
	RecoverOwner(ctx context.Context, owner string, at time.Time, t Takeover) (resumed, ended []Run, err error)
}

// OwnerQueue is the owner of a run waiting in the cluster's job queue
// (package cluster): no process runs it yet, and none is gone, so
// recovery leaves it alone until a worker claims it.
const OwnerQueue = "queue"

// QuarantinedError is the error recorded on a run that RecoverOwner
// interrupted because it was already resumed as often as allowed.
const QuarantinedError = "quarantined: the run was resumed as many times as allowed and its process stopped again"

// Takeover says which of a gone owner's active runs RecoverOwner resumes.
type Takeover struct {
	// Owner is the instance that takes over the resumed runs.
	Owner string
	// Resume reports whether a run may be resumed (its role allows it);
	// nil resumes none. It is called inside the store's transaction and
	// must not call the store.
	Resume func(Run) bool
	// MaxAttempts is how many times one run may be resumed; 0 resumes
	// none.
	MaxAttempts int
	// Seen, when set, is the gone owner's registration as it was when
	// it was judged gone (HeartbeatAt zero: it was not registered). RecoverOwner
	// then changes nothing if the registration changed since (the owner
	// renewed its lease: it was paused, not dead), in the same
	// transaction, so a process never loses runs it holds a fresh lease
	// on.
	Seen *Instance
}

// LeaseUnchanged reports whether the registration now found (ok: it
// exists) is the one seen when its owner was judged gone.
func (t Takeover) LeaseUnchanged(now Instance, ok bool) bool {
	if t.Seen == nil {
		return true
	}
	if t.Seen.HeartbeatAt.IsZero() || !ok {
		return t.Seen.HeartbeatAt.IsZero() && !ok
	}
	return now.HeartbeatAt.Equal(t.Seen.HeartbeatAt)
}

// RunFilter selects runs for ListRuns. Zero fields select everything.
type RunFilter struct {
	// ParentSession keeps runs spawned from this session.
	ParentSession string
	// Status keeps runs in any of these statuses.
	Status []lifecycle.Status
	// Limit caps the number of runs returned (newest first); 0 means all.
	Limit int
	// Active keeps only active runs: queued, pending and running.
	Active bool
	// Role keeps runs of this role (the estimates learn from them).
	Role string
}

// Spend is what one turn spent on one model: the event vocabulary's
// one definition of spend on a model (event.ModelSpend).
type Spend = event.ModelSpend

// RunFinish is how a run ended, recorded by TransitionRun.
type RunFinish struct {
	Result json.RawMessage
	Error  string
	// Tokens, CostCents, Iterations and Active are the run's figures
	// over all its turns, which replace the record's (see Run).
	Tokens     int
	CostCents  float64
	Iterations int
	Active     time.Duration
	// EndedAt defaults to the store's clock when zero.
	EndedAt time.Time
	// Delivered marks the result as delivered (see MarkAnnounced) in the
	// same write: it reached its parent another way, or must never.
	Delivered bool
	// SpendSession, when set, has Spend (what the turn that ended used,
	// not the run's figures over all its turns) added to that session's
	// subagents' spend in the same transaction as the transition.
	SpendSession string
	Spend        Spend
	// Messages are appended (see AppendMessages) in the same transaction:
	// the turn's conversation is recorded together with its end.
	Messages []Message
	// Events are the last events of the run's own stream (an Error, its
	// SessionEnd), numbered by the event hub (event.Hub.PublishWith) and
	// stored, with their hook deliveries, in the same transaction: the
	// stream says the run ended exactly when its record does, and a
	// refused end stores none of them. A number already taken gives an
	// error wrapping event.ErrSeqTaken, and nothing is written.
	Events []event.Event
}

// Checkpoint is a running run's progress after a completed step (see
// RunStore.CheckpointRun).
type Checkpoint struct {
	// Owner is the writer: it must be the run's owner (the fence).
	Owner string
	// Messages are the step's new messages, in order.
	Messages   []Message
	Tokens     int
	CostCents  float64
	Iterations int
}

// Pending spawn statuses.
const (
	SpawnPending   = "pending"
	SpawnConfirmed = "confirmed"
	SpawnRejected  = "rejected"
	SpawnExpired   = "expired"
)

// PendingSpawn is a proposed spawn waiting for the person's decision.
type PendingSpawn struct {
	ID         string
	SessionKey string
	// Config is the proposed subagent configuration; a "modify" decision
	// replaces it.
	Config             json.RawMessage
	EstimateMinSeconds int
	EstimateMaxSeconds int
	MaxCostCents       float64
	Tools              []string
	Rationale          string
	Status             string
	CreatedAt          time.Time
	ExpiresAt          time.Time
	// RunID is the run started from a confirmed spawn.
	RunID string
	// Idempotency is Run.Idempotency for a spawn that became a proposal:
	// CreatePending records it with the proposal's ID as its Result.
	Idempotency *Idempotency
}

// Memory is one long-term memory entry.
type Memory struct {
	ID      int64
	Content string
	Tags    []string
	// Source says who or what wrote it (a session key, "user", …).
	Source    string
	CreatedAt time.Time
}

// Finding is one entry of a parallel group's or a chain's board: what a
// member posted for the others (post_finding). It is another agent's
// text, so untrusted to whoever reads it.
type Finding struct {
	// ID is assigned by the store; within a group it increases in the
	// order the findings were posted, so a reader asks for those after
	// the last one it saw.
	ID int64
	// GroupID is the group's ID (Run.GroupID of its members).
	GroupID string
	// RunID and ShortID name the run that posted it.
	RunID   string
	ShortID string
	// Role is the posting run's role.
	Role string
	// Text is what it posted, masked, at most MaxFindingBytes (a longer
	// text is cut, marked with CutNote).
	Text      string
	CreatedAt time.Time
	// Owner, when set, is the poster's lease on RunID (the fence, not
	// stored): PostFinding stores the finding only while that instance
	// owns the run and the run is active, checked in its own
	// transaction, else it stores nothing and the error wraps
	// event.ErrFenced with ErrStaleOwner or ErrInvalidTransition.
	Owner string
}

// Bounds of a board, enforced by PostFinding: a finding's text in bytes,
// and the findings one run and one group may post.
const (
	MaxFindingBytes     = 4096
	MaxFindingsPerRun   = 50
	MaxFindingsPerGroup = 500
)

// CutNote ends a finding's text that PostFinding cut at MaxFindingBytes.
const CutNote = "\n[… cut: a finding holds at most 4096 bytes]"

// BoardStore records the boards of groups: the findings their members
// share.
type BoardStore interface {
	// PostFinding appends f to its group's board and returns it with ID
	// and CreatedAt set. Its text is masked, and cut to MaxFindingBytes
	// (ending with CutNote) when longer. A run that has posted
	// MaxFindingsPerRun findings, or a group that holds
	// MaxFindingsPerGroup, is refused with an error wrapping
	// ErrBoardFull, checked and written atomically even when members on
	// several processes post at once.
	PostFinding(ctx context.Context, f Finding) (Finding, error)
	// Findings returns the group's findings with an ID above after,
	// oldest first, without those of the run exclude (a full run ID) when
	// it is set.
	Findings(ctx context.Context, group string, after int64, exclude string) ([]Finding, error)
}

// SessionStore records sessions and their messages.
type SessionStore interface {
	// EnsureSession returns the session, creating it if missing.
	EnsureSession(ctx context.Context, key string) (Session, error)
	// GetSession returns the session or ErrNotFound.
	GetSession(ctx context.Context, key string) (Session, error)
	// SetSessionTitle renames the session (a title CheckTitle passed);
	// ErrNotFound when there is none. A session's first user message
	// (AppendMessage, AppendMessages) gives an untitled session its
	// default title (TitleFrom).
	SetSessionTitle(ctx context.Context, key, title string) error
	// AddSessionSpend adds an orchestrator turn's spend to the session
	// (its budget's running total, and its own spend by model), creating
	// the session if missing.
	AddSessionSpend(ctx context.Context, key string, s Spend) error
	// SessionSpend is the session's spend rolled up: its own, its
	// subagents', the total and per model.
	SessionSpend(ctx context.Context, key string) (event.Spend, error)
	// SessionSpends is SessionSpend for several sessions in one query;
	// a session that spent nothing has no entry.
	SessionSpends(ctx context.Context, keys []string) (map[string]event.Spend, error)
	// SetSessionBudget sets the session's cap (0 = none), creating the
	// session if missing.
	SetSessionBudget(ctx context.Context, key string, cents float64) error
	// AppendMessage stores m (creating its session if missing) and
	// returns it with ID and CreatedAt set.
	AppendMessage(ctx context.Context, m Message) (Message, error)
	// AppendMessages stores msgs in order in one transaction: all of them
	// or none.
	AppendMessages(ctx context.Context, msgs []Message) error
	// Messages returns the session's messages oldest first; with limit > 0
	// only the last limit of them.
	Messages(ctx context.Context, sessionKey string, limit int) ([]Message, error)
	// ListSessions returns the sessions f selects, most recently updated
	// first.
	ListSessions(ctx context.Context, f SessionFilter) ([]Session, error)
}

// SessionFilter selects sessions for ListSessions. Zero fields select
// everything.
type SessionFilter struct {
	// Main keeps main sessions only (no subagent sessions).
	Main bool
	// Limit caps the number returned; 0 means all.
	Limit int
}

// RunStore records subagent runs.
type RunStore interface {
	// CreateRun stores a new run. A ShortID or ID already in use gives an
	// error wrapping ErrDuplicate, so the caller draws another.
	CreateRun(ctx context.Context, r Run) error
	// ShortIDExists reports whether a run has this short ID.
	ShortIDExists(ctx context.Context, short string) (bool, error)
	// GetRun finds a run by full ID, short ID, or a unique prefix of
	// either. It returns ErrNotFound, or an *AmbiguousError listing the
	// candidates.
	GetRun(ctx context.Context, idOrPrefix string) (Run, error)
	// ListRuns returns the runs f selects, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)
	// UpdateRunProgress records an active run's counters so far. A run
	// that has ended gives ErrInvalidTransition: its final counters stay.
	UpdateRunProgress(ctx context.Context, id string, tokens int, costCents float64, iterations int) error
	// CheckpointRun records an active run's progress after a completed
	// step, in one transaction: c's counters, and c.Messages appended to
	// the conversation after every message stored before. A run that has
	// ended gives an error wrapping ErrInvalidTransition, one that another
	// instance than c.Owner owns an error wrapping ErrStaleOwner; either
	// stores nothing.
	CheckpointRun(ctx context.Context, runID string, c Checkpoint) error
	// TransitionRun moves the run to status to if its status is one of
	// from, atomically, recording fin when given. Otherwise it returns
	// an error wrapping ErrInvalidTransition that names the status. An
	// edge lifecycle.CanMove does not allow is refused before any write.
	//
	// owner is the writer (the fence): a run that is active moves only
	// if owner owns it, else the error wraps ErrStaleOwner and nothing is
	// written. A finished run (a follow-up) may be moved by any owner.
	// Moving to an active status records owner as the run's owner.
	TransitionRun(ctx context.Context, id, owner string, from []lifecycle.Status, to lifecycle.Status, fin *RunFinish) error
	// AnnounceResult inserts msg into the run's parent session and marks
	// the run announced, together. It returns false, storing nothing, if
	// the run was already announced.
	//
	// owner, when set, fences it: the run's owner as the announcer knows
	// it (its own lease for an end it recorded, the owner it read from
	// the record for one it announces on a gone process's behalf). A run
	// whose owner changed since (a follow-up moved it on) is not
	// announced with this message: the error wraps ErrStaleOwner, and
	// nothing is stored.
	AnnounceResult(ctx context.Context, runID, owner string, msg Message) (bool, error)
	// MarkAnnounced marks a finished run's result as delivered without
	// adding a message: the result reached its parent another way (a
	// waiting tool call), or must never reach it (a cancelled run).
	// Marking a run twice is not an error.
	MarkAnnounced(ctx context.Context, runID string) error
	// Unannounced returns finished runs with a parent whose result was
	// not yet announced, oldest first.
	Unannounced(ctx context.Context) ([]Run, error)
}

// ReportStore keeps what a session owes the person once its background
// subagents have ended: a report of their results (issue 40). A result
// announced into the session (RunStore.AnnounceResult) makes it owed;
// a turn whose messages follow the results answers it by itself; a
// report turn claims it first, so that in a cluster, or after a crash,
// it is made once.
type ReportStore interface {
	// ClaimReport claims the report owed for the results at the end of
	// the session's history: when its last message is a subagent's
	// result and a result that makes it owed (AnnounceResult of a run's
	// first turn, not a follow-up's) was not claimed before, it records
	// that last message's ID as reported and returns it with true. Of processes claiming at once,
	// one gets true. A session whose last message is not a result (a
	// turn answered since) owes nothing: false.
	ClaimReport(ctx context.Context, key string) (through int64, claimed bool, err error)
	// UnreportedSessions lists the sessions whose newest announced
	// result was stored before before and is not claimed: what a
	// recovery sweep reports for a process that stopped before it could.
	UnreportedSessions(ctx context.Context, before time.Time) ([]string, error)
}

// PendingStore records spawns awaiting confirmation.
type PendingStore interface {
	// CreatePending stores a new pending spawn; an ID in use gives
	// ErrDuplicate.
	CreatePending(ctx context.Context, p PendingSpawn) error
	// GetPending returns the pending spawn or ErrNotFound.
	GetPending(ctx context.Context, id string) (PendingSpawn, error)
	// ListPending returns the session's undecided, unexpired spawns,
	// oldest first; an empty sessionKey lists every session's.
	ListPending(ctx context.Context, sessionKey string) ([]PendingSpawn, error)
	// DecidePending confirms or rejects a pending spawn. A non-nil config
	// replaces the proposed one. It fails with ErrExpired after ExpiresAt
	// and with ErrInvalidTransition when already decided.
	DecidePending(ctx context.Context, id, decision string, config json.RawMessage, runID string) error
	// ExpirePending marks every pending spawn whose ExpiresAt is not after
	// now as expired and returns those it marked (as they are now), so
	// that each expiry is reported by exactly one caller.
	ExpirePending(ctx context.Context, now time.Time) ([]PendingSpawn, error)
}

// MemoryStore records long-term memory.
type MemoryStore interface {
	// WriteMemory stores m and returns it with ID and CreatedAt set.
	WriteMemory(ctx context.Context, m Memory) (Memory, error)
	// SearchMemory returns up to limit memories matching any word of
	// query, best match first. Query text is taken literally.
	SearchMemory(ctx context.Context, query string, limit int) ([]Memory, error)
	// RecentMemory returns up to limit memories, newest first.
	RecentMemory(ctx context.Context, limit int) ([]Memory, error)
}

// Idempotency scopes: the requests that take an idempotency key.
const (
	// IdempotencySpawn is a spawn (POST /api/subagents); its Result is
	// the run's short ID, or the proposal's ID.
	IdempotencySpawn = "spawn"
	// IdempotencyChat is a message to a session (POST /api/chat); its
	// Result is the session key.
	IdempotencyChat = "chat"
)

// IdempotencyTTL is how long an idempotency key is kept: a repeat within
// it gets the first request's result, a later one is a new request.
const IdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKey bounds an idempotency key's length in bytes.
const MaxIdempotencyKey = 255

// Idempotency is a request's idempotency key as the store keeps it,
// recorded in the same transaction as what the request made, so that
// the two land together or not at all.
type Idempotency struct {
	// Scope is the kind of request (IdempotencySpawn, IdempotencyChat):
	// the same key in two scopes is two keys.
	Scope string
	// Key is the client's key (Idempotency-Key), 1 to
	// MaxIdempotencyKey printable ASCII characters.
	Key string
	// RequestHash identifies the request's content: a repeat with
	// another hash is a different request under a used key.
	RequestHash string
	// Result names what the first request made (a run's short ID, a
	// proposal's ID, a session key).
	Result    string
	CreatedAt time.Time
}

// IdempotencyStore records idempotency keys. They are written by the
// write they belong to (CreateRun, CreatePending, RecordIdempotency's
// callers); keys older than IdempotencyTTL are forgotten, and deleted
// when a new one is recorded.
type IdempotencyStore interface {
	// GetIdempotency returns the key recorded in scope, or ErrNotFound
	// when there is none younger than IdempotencyTTL.
	GetIdempotency(ctx context.Context, scope, key string) (Idempotency, error)
	// RecordIdempotency records k alone (for a request whose effect is
	// written elsewhere); ErrKeyUsed when it is recorded already.
	RecordIdempotency(ctx context.Context, k Idempotency) error
	// ForgetIdempotency deletes the key (scope, key) when its Result is
	// result: a request that recorded its key and then failed frees it
	// for a retry.
	ForgetIdempotency(ctx context.Context, scope, key, result string) error
}

// Store is the whole durable record.
type Store interface {
	IdempotencyStore
	SessionStore
	RunStore
	ReportStore
	PendingStore
	MemoryStore
	BoardStore
	OwnerStore
	ChannelStore
	HookStore
	LoginStore
	// Log is every session's numbered events (see package event).
	event.Log
	// Close releases the store; calling it again is harmless.
	Close() error
}

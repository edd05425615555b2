package ava

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
)

// Event is one event of a session's stream (seed 002's agent_event):
// messages, tool calls, subagents starting and ending, proposals,
// questions, spend.
type Event = event.Event

// Subscription is a session's events from a sequence number on, replayed
// from the store and then live; Close it when done.
type Subscription = event.Subscription

// Spend is a session's spend rolled up: its own turns, its subagents,
// the total, and per model.
type Spend = event.Spend

// Turn is one message being answered: Wait for its result.
type Turn = session.Turn

// TurnResult is a finished turn's answer (masked).
type TurnResult = session.Result

// SendOptions say how to deliver one message: queue behind a running
// turn, supersede it, merge with it, steer a subagent, the model, limits
// and budget.
type SendOptions = session.SendOptions

// SessionState is a main session's state: idle, running, or waiting for
// its subagents.
type SessionState = session.State

// The session states.
const (
	Idle                = session.Idle
	Running             = session.Running
	WaitingForSubagents = session.WaitingForSubagents
)

// SessionRef is a resolved session key.
type SessionRef struct {
	// Key is the full key (a subagent's with its full short ID).
	Key string
	// SubagentID is set for a subagent's session.
	SubagentID string
}

// IsSubagentKey reports whether key is a subagent's session key
// (ava:subagent:S-…).
func IsSubagentKey(key string) bool { return session.IsSubagentKey(key) }

// ParseSessionKey reads what a person typed for a session by the one rule
// every surface shares (see session.ParseKey): a key with ':' as it is,
// S-xxxxxx (or a prefix) as that subagent's session, a bare name such as
// notes as ava:cli:notes. Anything else is ErrBadKey naming the forms.
func ParseSessionKey(s string) (string, error) { return session.ParseKey(s) }

// Resolve finds a session: a subagent key by its run (ID or unique
// prefix, live or stored), a main key by its stored session, its stored
// events or a turn running now. A malformed key is ErrBadKey, an unknown
// one ErrNotFound, an ambiguous subagent prefix of kind Invalid.
func (r *Runtime) Resolve(ctx context.Context, key string) (SessionRef, error) {
	if err := CheckSessionKey(key); err != nil {
		return SessionRef{}, err
	}
	if IsSubagentKey(key) {
		id, err := r.subagentID(ctx, key[strings.LastIndex(key, ":")+1:])
		if err != nil {
			return SessionRef{}, err
		}
		return SessionRef{Key: store.SubagentSessionPrefix + id, SubagentID: id}, nil
	}
	_, err := r.in.Store.GetSession(ctx, key)
	if err == nil {
		return SessionRef{Key: key}, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return SessionRef{}, err
	}
	if r.State(key) != Idle {
		return SessionRef{Key: key}, nil
	}
	if last, err := r.in.Store.LastSeq(ctx, key); err == nil && last > 0 {
		return SessionRef{Key: key}, nil
	}
	return SessionRef{}, fmt.Errorf("session %s: %w", key, ErrNotFound)
}

// subagentID resolves a subagent ID or unique prefix to its short ID: a
// run this process holds, else a stored one.
func (r *Runtime) subagentID(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", invalidf("subagent ID: empty")
	}
	h, err := r.in.Subagent.Get(id)
	if err == nil {
		return h.ID(), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	run, err := r.in.Store.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	return run.ShortID, nil
}

// Target is the session a message goes to, created by nothing yet: an
// existing one (Resolve); a new main session under a key the caller chose,
// which its first message creates (Send), when the key's grammar allows it
// (CheckNewSessionKey); or, for an empty key, a fresh key of channel
// ("web", "cli", …). Unlike NewSession and EnsureSession it writes
// nothing. A key no new session may have is ErrBadKey; a subagent key
// that names no run, ErrNotFound.
func (r *Runtime) Target(ctx context.Context, key, channel string) (SessionRef, error) {
	if key == "" {
		key, err := newSessionKey(channel)
		return SessionRef{Key: key}, err
	}
	ref, err := r.Resolve(ctx, key)
	if errors.Is(err, ErrNotFound) && !IsSubagentKey(key) {
		if err := CheckNewSessionKey(key); err != nil {
			return SessionRef{}, fmt.Errorf("sessionKey: %w", err)
		}
		return SessionRef{Key: key}, nil
	}
	return ref, err
}

// KeyedSessionKey is the new main session of channel a message sent
// with an idempotency key and no session key goes to:
// ava:<channel>:<16 hex of the key's SHA-256>, the same for every
// repeat of the message, so that a repeat finds the first one's session
// (a fresh random key each time would make it another request).
func KeyedSessionKey(channel, idempotencyKey string) string {
	sum := sha256.Sum256([]byte(idempotencyKey))
	return "ava:" + channel + ":" + hex.EncodeToString(sum[:8])
}

// NewSession creates a main session of channel ("web", "cli", …) with a
// fresh key, ava:<channel>:<8 hex>, and returns the key (EnsureSession
// creates one under a key of the caller's). A channel the key grammar
// refuses (empty, upper case, …) is ErrBadKey; a read-only runtime
// ErrReadOnly.
func (r *Runtime) NewSession(ctx context.Context, channel string) (string, error) {
	if err := r.writable(); err != nil {
		return "", err
	}
	key, err := newSessionKey(channel)
	if err != nil {
		return "", err
	}
	if _, err := r.in.Store.EnsureSession(ctx, key); err != nil {
		return "", fmt.Errorf("new session: %w", err)
	}
	return key, nil
}

// newSessionKey is a fresh main session key of channel, ava:<channel>:<8
// hex>, checked as a new session's key (the channel may be malformed).
func newSessionKey(channel string) (string, error) {
	key := "ava:" + channel + ":" + uuid.NewString()[:8]
	if err := CheckNewSessionKey(key); err != nil {
		return "", fmt.Errorf("channel %q: %w", channel, err)
	}
	return key, nil
}

// Send delivers a message to a session: a turn of a main session (a new
// main key of the grammar ava:<channel>:<id> is created by it), or a
// follow-up to a subagent (Steer delivers it into a running subagent's
// conversation). It returns at once; Wait on the turn. It fails with
// ErrReadOnly, ErrInvalid (an empty message, Steer on a main session),
// ErrBadKey (a malformed key), ErrNoModel (no provider and no model for a main
// session), ErrBusy (a turn runs and the options say neither to queue nor
// to supersede), ErrNotFound (a subagent key that names no run) or
// ErrBudget (the session's budget is spent).
func (r *Runtime) Send(ctx context.Context, key, message string, opt SendOptions) (*Turn, error) {
	if err := r.checkSend(key, message, opt); err != nil {
		return nil, err
	}
	return r.in.Sessions.Send(ctx, key, message, opt)
}

// checkSend refuses what Send refuses before the message reaches the
// session.
func (r *Runtime) checkSend(key, message string, opt SendOptions) error {
	if err := r.writable(); err != nil {
		return err
	}
	if strings.TrimSpace(message) == "" {
		return invalidf("message: empty")
	}
	if opt.Steer && !IsSubagentKey(key) {
		return invalidf("steer: only a subagent (ava:subagent:S-…) can be steered; a main session's message joins or follows its turn")
	}
	if !IsSubagentKey(key) {
		if _, err := r.OrchestratorModel(opt.Model); err != nil {
			return err
		}
	}
	return nil
}

// Chat is Send that also follows the session: the subscription starts
// after the session's last stored event, so the caller sees every event
// of this turn and nothing older. Close the subscription when done. Its
// errors are Send's.
func (r *Runtime) Chat(ctx context.Context, key, message string, opt SendOptions) (*Turn, *Subscription, error) {
	if err := r.writable(); err != nil {
		return nil, nil, err
	}
	last, err := r.LastSeq(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	sub := r.in.Sessions.Follow(key, last)
	// The turn's first event is numbered from the number just read,
	// not from a read of its own beside the turn's.
	r.in.Hub.Numbered(key, last)
	t, err := r.Send(ctx, key, message, opt)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	return t, sub, nil
}

// ChatReply is what ChatOnce did with a message.
type ChatReply struct {
	// Turn is the message's turn: a new one, or, for a repeat, the first
	// message's turn while this process keeps it (waiting, running, or
	// ended less than 10 minutes ago). Nil for a repeat whose turn is
	// not kept here (it ended earlier, or runs in another process).
	Turn *Turn
	// Sub follows the session from where Turn's events begin; nil when
	// Turn is. Close it when done.
	Sub *Subscription
	// Session is the session the message went to.
	Session string
	// Replayed marks a repeat: the message came before under its
	// idempotency key and was not sent again.
	Replayed bool
}

// ChatOnce is Chat for a message that may carry an idempotency key
// (SendOptions.IdempotencyKey, POST /api/chat's Idempotency-Key): the
// key is recorded in the transaction that stores the message, and a
// repeat of the message with it is not sent again but answered with
// the first one's turn and its stream from where that turn began
// (Replayed). The same key with another message or other options is
// ErrKeyReused; a key on a subagent's session is ErrInvalid. Without a
// key it is Chat. See docs/api.md, "Idempotency keys".
func (r *Runtime) ChatOnce(ctx context.Context, key, message string, opt SendOptions) (ChatReply, error) {
	if opt.IdempotencyKey == "" {
		t, sub, err := r.Chat(ctx, key, message, opt)
		return ChatReply{Turn: t, Sub: sub, Session: key}, err
	}
	if err := CheckIdempotencyKey(opt.IdempotencyKey); err != nil {
		return ChatReply{}, err
	}
	if IsSubagentKey(key) {
		return ChatReply{}, invalidf("idempotency key: only a message to a main session takes one; a subagent's follow-up does not")
	}
	if err := r.checkSend(key, message, opt); err != nil {
		return ChatReply{}, err
	}
	last, err := r.LastSeq(ctx, key)
	if err != nil {
		return ChatReply{}, err
	}
	sub := r.in.Sessions.Follow(key, last)
	r.in.Hub.Numbered(key, last)
	opt.From = last
	t, rep, err := r.in.Sessions.SendOnce(ctx, key, message, opt)
	if err != nil || rep != nil {
		sub.Close()
	}
	switch {
	case err != nil:
		return ChatReply{}, err
	case rep == nil:
		return ChatReply{Turn: t, Sub: sub, Session: key}, nil
	case rep.Turn == nil:
		return ChatReply{Session: rep.Session, Replayed: true}, nil
	}
	return ChatReply{Turn: rep.Turn, Sub: r.in.Sessions.Follow(rep.Session, rep.Turn.From()), Session: rep.Session, Replayed: true}, nil
}

// Stop stops a session's running turn (and the subagents it started), or
// a subagent; stopped is false when nothing ran. A subagent another
// process runs is ErrBusy; an unknown key ErrNotFound; a read-only
// runtime ErrReadOnly.
func (r *Runtime) Stop(ctx context.Context, key string) (stopped bool, err error) {
	if err := r.writable(); err != nil {
		return false, err
	}
	ref, err := r.Resolve(ctx, key)
	if err != nil {
		return false, err
	}
	if ref.SubagentID != "" {
		if _, err := r.in.Subagent.Get(ref.SubagentID); errors.Is(err, store.ErrNotFound) {
			_, err := r.elsewhere(ctx, "stop", ref.SubagentID)
			return false, err
		}
	}
	return r.in.Sessions.Stop(ref.Key)
}

// State is a main session's state in this process.
func (r *Runtime) State(key string) SessionState {
	if r.in.Sessions == nil {
		return Idle
	}
	return r.in.Sessions.State(key)
}

// Follow returns the session's events after the sequence number after,
// replayed and then live, for as long as the caller reads (it outlives
// the session's turns).
func (r *Runtime) Follow(key string, after uint64) *Subscription { return r.in.Hub.Follow(key, after) }

// LastSeq is the sequence number of a session's last stored event (0 for
// a session with none); its error is the store's.
func (r *Runtime) LastSeq(ctx context.Context, key string) (uint64, error) {
	last, err := r.in.Store.LastSeq(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("session %s: %w", key, err)
	}
	return last, nil
}

// Session is a main session as every surface shows it.
type Session struct {
	Key string `json:"key"`
	// Title is what a menu shows for it: its first message's first line,
	// cut, or what the person renamed it to (RenameSession); "" until
	// its first message.
	Title     string       `json:"title"`
	State     SessionState `json:"state"`
	CreatedAt time.Time    `json:"createdAt"`
	UpdatedAt time.Time    `json:"updatedAt"`
	// SpentCents counts against BudgetCents (0: no budget).
	SpentCents  float64 `json:"spentCents"`
	BudgetCents float64 `json:"budgetCents,omitempty"`
	// RunningSubagents counts the subagents it started that still run
	// here.
	RunningSubagents int `json:"runningSubagents"`
	// Spend is what it spent: its own turns, all its subagents (over all
	// their turns, as their Figures), the total, and per model.
	Spend Spend `json:"spend"`
}

// DefaultSessionLimit is how many sessions Sessions returns by default.
const DefaultSessionLimit = 100

// Sessions returns the main sessions, most recently active first (limit
// 0: DefaultSessionLimit); its error is the store's.
func (r *Runtime) Sessions(ctx context.Context, limit int) ([]Session, error) {
	if limit <= 0 {
		limit = DefaultSessionLimit
	}
	stored, err := r.in.Store.ListSessions(ctx, store.SessionFilter{Main: true, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return r.sessionViews(ctx, stored)
}

// Session returns one main session with its spend: a malformed key is
// ErrBadKey, a key no stored session has ErrNotFound.
func (r *Runtime) Session(ctx context.Context, key string) (Session, error) {
	if err := CheckSessionKey(key); err != nil {
		return Session{}, err
	}
	ss, err := r.in.Store.GetSession(ctx, key)
	if err != nil {
		return Session{}, err
	}
	v, err := r.sessionViews(ctx, []store.Session{ss})
	if err != nil {
		return Session{}, err
	}
	return v[0], nil
}

// RenameSession sets a main session's title, what the panel's menu
// shows for it, and returns the session: spaces are collapsed; an empty
// title or one over store.MaxTitleRunes characters, or a malformed key,
// is of kind Invalid; a key no stored session has is ErrNotFound; a
// read-only runtime is ErrReadOnly.
func (r *Runtime) RenameSession(ctx context.Context, key, title string) (Session, error) {
	if err := r.writable(); err != nil {
		return Session{}, err
	}
	if err := CheckSessionKey(key); err != nil {
		return Session{}, err
	}
	if IsSubagentKey(key) {
		return Session{}, invalidf("session %s: a subagent's session has no title of its own", key)
	}
	if err := r.in.Store.SetSessionTitle(ctx, key, title); err != nil {
		return Session{}, fmt.Errorf("rename session: %w", err)
	}
	return r.Session(ctx, key)
}

// sessionViews are stored sessions with their live state, running
// subagents and spend rolled up (one query for all).
func (r *Runtime) sessionViews(ctx context.Context, stored []store.Session) ([]Session, error) {
	keys := make([]string, len(stored))
	for i, ss := range stored {
		keys[i] = ss.Key
	}
	spends, err := r.in.Store.SessionSpends(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("session spend: %w", err)
	}
	out := make([]Session, 0, len(stored))
	for _, ss := range stored {
		running := 0
		if r.in.Sessions != nil {
			running = len(r.in.Sessions.Subagents(ss.Key))
		}
		out = append(out, Session{Key: ss.Key, Title: ss.Title, State: r.State(ss.Key), CreatedAt: ss.CreatedAt, UpdatedAt: ss.UpdatedAt,
			SpentCents: ss.SpentCents, BudgetCents: ss.BudgetCents, RunningSubagents: running, Spend: spends[ss.Key]})
	}
	return out, nil
}

// Running returns a channel per turn and subagent running in this
// process, each closed when it ends: a shutdown waits on them.
func (r *Runtime) Running() []<-chan struct{} {
	var out []<-chan struct{}
	if r.in.Sessions != nil {
		out = append(out, r.in.Sessions.Turns()...)
	}
	for _, h := range r.in.Subagent.List(false) {
		out = append(out, h.Done())
	}
	return out
}

// CloseSessions cancels every turn and waits for them (the first step of
// a daemon's last stage of shutdown); Close does it too.
func (r *Runtime) CloseSessions() error {
	if r.in.Sessions == nil {
		return nil
	}
	return r.in.Sessions.Close()
}

// The event types a surface most often looks for (package event has
// them all).
const (
	UserMessage      = event.UserMessage
	AssistantMessage = event.AssistantMessage
	SubagentSpawn    = event.SubagentSpawn
	SubagentComplete = event.SubagentComplete
	SessionEnd       = event.SessionEnd
)

// EnsureSession creates the main session key unless it exists: a
// surface that names its sessions itself (each MCP session is
// ava:mcp:<id>) creates one before it spawns for it. A session that
// exists is left as it is; a new key must follow the grammar of a new
// main session's key (CheckNewSessionKey: never a subagent's), else it
// is ErrBadKey; a read-only runtime is ErrReadOnly.
func (r *Runtime) EnsureSession(ctx context.Context, key string) error {
	if err := r.writable(); err != nil {
		return err
	}
	if _, err := r.Resolve(ctx, key); err == nil || !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := CheckNewSessionKey(key); err != nil {
		return fmt.Errorf("sessionKey: %w", err)
	}
	if _, err := r.in.Store.EnsureSession(ctx, key); err != nil {
		return fmt.Errorf("session %s: %w", key, err)
	}
	return nil
}

// WaitReport waits until nothing of the session runs in this process
// any more — its turn, its background subagents, the report Ava makes
// of their results (on_complete) — and returns that report's result
// when this process made one (ok false otherwise). A one-shot client
// (`ava run`) calls it before exiting, so that the answer the person
// asked for is there.
func (r *Runtime) WaitReport(ctx context.Context, key string) (res TurnResult, ok bool, err error) {
	if err := r.writable(); err != nil {
		return TurnResult{}, false, err
	}
	return r.in.Sessions.WaitReport(ctx, key)
}

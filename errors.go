package ava

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// The errors a Runtime's methods wrap; test with errors.Is, or classify
// with KindOf.
var (
	// ErrNotFound: no such session, subagent, proposal or question.
	ErrNotFound = store.ErrNotFound
	// ErrBusy: a turn runs and the message asked neither to queue nor to
	// supersede, or another process runs the subagent.
	ErrBusy = session.ErrBusy
	// ErrForbidden: the caller may not do this (a subagent spawning, a
	// model only the operator may name).
	ErrForbidden = tool.ErrForbidden
	// ErrReadOnly: the runtime was opened ReadOnly.
	ErrReadOnly = errors.New("this runtime was opened read-only: it runs no sessions or subagents")
	// ErrInvalid: a malformed request (an empty message, a bad key or
	// limit).
	ErrInvalid = errors.New("invalid request")
	// ErrUnclear: an answer to a proposal that is neither a yes, a no nor
	// a change: ask the person again.
	ErrUnclear = subagent.ErrUnclear
	// ErrDecided: the proposal was decided already.
	ErrDecided = subagent.ErrDecided
	// ErrExpired: the proposal expired.
	ErrExpired = store.ErrExpired
	// ErrLimit: every subagent slot is taken (and the queue is full or
	// off).
	ErrLimit = subagent.ErrLimit
	// ErrBudget: the session's budget is spent.
	ErrBudget = subagent.ErrBudget
	// ErrDiskFull: the store's disk is full; nothing was recorded.
	ErrDiskFull = store.ErrDiskFull
	// ErrNoQuestion: no question is open.
	ErrNoQuestion = question.ErrNoQuestion
	// ErrNoModel: no model provider is configured and no model is named
	// (Send to a main session, Spawn); its message says how to configure
	// one, or to go offline with Offline.
	ErrNoModel = app.ErrNoModel
	// ErrBadKey: a session key no session has or may have (KindOf:
	// Invalid).
	ErrBadKey = session.ErrBadKey
)

// Kind is what kind of failure an error is, for a surface to choose its
// answer (an HTTP status, an MCP error, words in a chat): one
// classification for every surface.
type Kind int

// The kinds of failure.
const (
	// Internal is anything not classified: a bug or an I/O failure.
	Internal Kind = iota
	// Invalid is a malformed request.
	Invalid
	// NotFound names nothing that exists.
	NotFound
	// Conflict is a state that forbids it now (decided, expired).
	Conflict
	// Busy is a session or subagent busy elsewhere.
	Busy
	// Unclear is an answer to ask again for.
	Unclear
	// Limit is every slot taken.
	Limit
	// Budget is a spent budget.
	Budget
	// Forbidden is not allowed for this caller.
	Forbidden
	// Full is a full disk: nothing was recorded.
	Full
	// Unavailable is a runtime shutting down, read-only, without a model
	// (ErrNoModel), or a store that does not answer (store.Unavailable:
	// a connection refused or reset, a deadline that passed while a call
	// waited for the database): try again later.
	Unavailable
)

// KindOf classifies err.
func KindOf(err error) Kind {
	var amb *store.AmbiguousError
	switch {
	case err == nil:
		return Internal
	case errors.Is(err, ErrInvalid), errors.As(err, &amb), errors.Is(err, store.ErrAmbiguous),
		errors.Is(err, subagent.ErrUnknownRole), errors.Is(err, subagent.ErrBadDecision), errors.Is(err, store.ErrEmpty),
		errors.Is(err, question.ErrEmptyAnswer), errors.Is(err, session.ErrBadKey), errors.Is(err, store.ErrBadTitle):
		return Invalid
	case errors.Is(err, ErrUnclear):
		return Unclear
	case errors.Is(err, ErrDecided), errors.Is(err, ErrExpired), errors.Is(err, ErrKeyReused):
		return Conflict
	case store.Unavailable(err) && !errors.Is(err, ErrNotFound):
		// Before fs.ErrNotExist: a database's unix socket gone while it
		// is stopped fails to dial with ENOENT, which is no missing file.
		return Unavailable
	case errors.Is(err, ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrNoQuestion):
		return NotFound
	case errors.Is(err, ErrBusy), errors.Is(err, subagent.ErrBusy):
		return Busy
	case errors.Is(err, ErrLimit):
		return Limit
	case errors.Is(err, ErrBudget):
		return Budget
	case errors.Is(err, ErrForbidden), errors.Is(err, llm.ErrOperatorOnlyModel):
		return Forbidden
	case errors.Is(err, ErrDiskFull):
		return Full
	case errors.Is(err, ErrReadOnly), errors.Is(err, ErrNoModel), errors.Is(err, session.ErrClosed), errors.Is(err, subagent.ErrClosed),
		errors.Is(err, subagent.ErrNotRecorded), store.Unavailable(err):
		return Unavailable
	}
	return Internal
}

// invalidf is an ErrInvalid with a message of its own (the message is
// what a person reads; the kind stays testable).
func invalidf(format string, args ...any) error {
	return invalidError{msg: fmt.Sprintf(format, args...)}
}

type invalidError struct{ msg string }

func (e invalidError) Error() string        { return e.msg }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// writable fails with ErrReadOnly for a read-only runtime.
func (r *Runtime) writable() error {
	if r.in.Sessions == nil {
		return ErrReadOnly
	}
	return nil
}

// MaxSessionKey bounds a session key's length.
const MaxSessionKey = session.MaxKeyLen

// CheckSessionKey refuses a malformed session key: empty, too long, with
// spaces or control characters, or a subagent key without its ID (the one
// key grammar, package session). The error is ErrBadKey.
func CheckSessionKey(key string) error { return session.CheckKey(key) }

// CheckNewSessionKey refuses a key a new main session may not be created
// under: the form is ava:<channel>:<id> (see session.CheckNewKey), and
// ava:subagent: keys are the runtime's own. The error is ErrBadKey.
func CheckNewSessionKey(key string) error { return session.CheckNewKey(key) }

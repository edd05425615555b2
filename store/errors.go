package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

// Sentinel errors. Backends wrap them with context; test with errors.Is.
var (
	// ErrNotFound means no record has the given key or ID.
	ErrNotFound = errors.New("not found")
	// ErrDuplicate means a unique key (a run's ID or short ID, a pending
	// spawn's ID) is already in use.
	ErrDuplicate = errors.New("already exists")
	// ErrInvalidTransition means a record is not in a status the change
	// is allowed from; the wrapping error names the current status.
	ErrInvalidTransition = lifecycle.ErrInvalidTransition
	// ErrExpired means a pending spawn's decision came after its
	// ExpiresAt.
	ErrExpired = errors.New("pending spawn expired")
	// ErrEmpty means an ID, prefix or key is empty (a run reference of
	// "S-" alone is empty too): the caller's mistake.
	ErrEmpty = errors.New("empty")
	// ErrAmbiguous is matched by every *AmbiguousError.
	ErrAmbiguous = errors.New("ambiguous ID prefix")
	// ErrClosed means the store was closed: no retry of a write can
	// succeed.
	ErrClosed = event.ErrLogClosed
	// ErrDiskFull means a write failed for want of space where the store
	// keeps its data; it may succeed once space is freed.
	ErrDiskFull = errors.New("no space left on the store's disk")
	// ErrBoardFull means a group's board, or the share of it one run may
	// post, holds as many findings as it may (MaxFindingsPerGroup,
	// MaxFindingsPerRun). Nothing was written.
	ErrBoardFull = errors.New("the board is full")
	// ErrStaleOwner means a fenced run write came from an instance that
	// no longer owns the run: another process took it over, or the
	// writer lost its lease (a process paused past it registers again
	// under a new ID, so its old ID fences everything it started before).
	// Nothing was written.
	// ErrKeyUsed means an idempotency key was recorded already, in the
	// same scope (another request with it won): nothing was written.
	// Look the key up (IdempotencyStore.GetIdempotency) for what the
	// first request made.
	ErrKeyUsed = errors.New("the idempotency key was used already")
	// ErrUnavailable means the store did not answer: its database
	// refused or dropped the connection, or did not answer in time. The
	// write may be tried again later; see Unavailable, which also
	// recognises the drivers' own errors.
	ErrUnavailable = errors.New("the database is unavailable")
	ErrStaleOwner  = errors.New("the run is not this process's any more (another process took it over, or this process lost its lease)")
)

// maxListedCandidates caps how many candidates an AmbiguousError prints.
const maxListedCandidates = 10

// AmbiguousError says an ID prefix matches more than one run.
type AmbiguousError struct {
	// Prefix is the prefix as given.
	Prefix string
	// Candidates are the short IDs of every matching run, sorted.
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	listed := e.Candidates
	more := ""
	if len(listed) > maxListedCandidates {
		more = fmt.Sprintf(" and %d more", len(listed)-maxListedCandidates)
		listed = listed[:maxListedCandidates]
	}
	return fmt.Sprintf("run ID prefix %q is ambiguous: it matches %s%s; give more characters",
		e.Prefix, strings.Join(listed, ", "), more)
}

// Is makes errors.Is(err, ErrAmbiguous) true for an *AmbiguousError.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// Unavailable reports whether err says the store did not answer, rather
// than that it refused what was asked: ErrUnavailable, a connection
// refused, reset or broken, a timeout on the connection, a deadline that
// passed while a call waited (context.DeadlineExceeded), or a
// PostgreSQL error of class 08 (connection exception) or 57P (the
// server shutting down or not yet up). It is the one classification of
// an outage: the core maps it to its Unavailable kind, which every
// surface answers as "try again later" (HTTP 503 with Retry-After).
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ETIMEDOUT) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// A connection that could not be made: refused, or a unix socket
	// that is gone while the database is stopped (ENOENT).
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	// The PostgreSQL driver's *pgconn.PgError, without importing it.
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		c := coded.SQLState()
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57P")
	}
	return false
}

// Outage reports whether err says the store cannot take writes for now
// (unreachable, paused, its disk full), as against a write it refuses:
// a run waits an outage out however long (see subagent's ride and
// event.Fence.Until), a refusal only for a bounded time.
func Outage(err error) bool {
	return Unavailable(err) || errors.Is(err, ErrDiskFull)
}

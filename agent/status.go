package agent

import (
	"context"
	"errors"

	"github.com/avaagent/ava/lifecycle"
)

// Cancellation causes. A run's context is cancelled with one of these as
// its cause (context.WithCancelCause); StatusOf maps them to statuses.
var (
	ErrTimeout            = errors.New("wall-clock timeout reached")
	ErrCostExceeded       = errors.New("cost cap reached")
	ErrTokensExceeded     = errors.New("token cap reached")
	ErrIterationsExceeded = errors.New("iteration cap reached")
	ErrCancelled          = errors.New("cancelled")
	// ErrEmptyResult ends a run whose final answer is empty, or misses
	// what its caller requires (Config.CheckAnswer): status error, never
	// success.
	ErrEmptyResult = errors.New("empty_result")
	// ErrNotOwner ends a run this process no longer owns (Config.Hold):
	// another process took it over or ended it. Status interrupted; the
	// store refuses whatever the run would still record.
	ErrNotOwner = errors.New("this process no longer owns the run")
)

// StatusOf maps a run's ending error (or its context's cause) to a final
// status: the one place where causes become statuses. nil is success; an
// unrecognised error is lifecycle.Error; a bare context.Canceled is
// lifecycle.Cancelled and a bare DeadlineExceeded is lifecycle.Timeout.
func StatusOf(err error) lifecycle.Status {
	switch {
	case err == nil:
		return lifecycle.Success
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return lifecycle.Timeout
	case errors.Is(err, ErrCostExceeded):
		return lifecycle.CostExceeded
	case errors.Is(err, ErrTokensExceeded):
		return lifecycle.TokensExceeded
	case errors.Is(err, ErrIterationsExceeded):
		return lifecycle.IterationsExceeded
	case errors.Is(err, ErrNotOwner):
		return lifecycle.Interrupted
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return lifecycle.Cancelled
	}
	return lifecycle.Error
}

package agent

import (
	"context"
	"errors"
)

// Status is how a run stands or how it ended.
type Status string

// Statuses. Running and Pending are live; the others are final.
const (
	StatusPending            Status = "pending"
	StatusRunning            Status = "running"
	StatusSuccess            Status = "success"
	StatusTimeout            Status = "timeout"
	StatusCostExceeded       Status = "cost_exceeded"
	StatusTokensExceeded     Status = "tokens_exceeded"
	StatusIterationsExceeded Status = "iterations_exceeded"
	StatusCancelled          Status = "cancelled"
	StatusError              Status = "error"
	// StatusInterrupted marks a run that was running when its process died.
	StatusInterrupted Status = "interrupted"
)

// Final reports whether s is a final status.
func (s Status) Final() bool { return s != StatusPending && s != StatusRunning && s != "" }

// Cancellation causes. A run's context is cancelled with one of these as
// its cause (context.WithCancelCause); StatusOf maps them to statuses.
var (
	ErrTimeout            = errors.New("wall-clock timeout reached")
	ErrCostExceeded       = errors.New("cost cap reached")
	ErrTokensExceeded     = errors.New("token cap reached")
	ErrIterationsExceeded = errors.New("iteration cap reached")
	ErrCancelled          = errors.New("cancelled")
)

// StatusOf maps a run's ending error (or its context's cause) to a final
// status: the one place where causes become statuses. nil is success; an
// unrecognised error is StatusError; a bare context.Canceled is
// StatusCancelled and a bare DeadlineExceeded is StatusTimeout.
func StatusOf(err error) Status {
	switch {
	case err == nil:
		return StatusSuccess
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return StatusTimeout
	case errors.Is(err, ErrCostExceeded):
		return StatusCostExceeded
	case errors.Is(err, ErrTokensExceeded):
		return StatusTokensExceeded
	case errors.Is(err, ErrIterationsExceeded):
		return StatusIterationsExceeded
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return StatusCancelled
	}
	return StatusError
}

package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// ErrStreamCut means the response stream ended before the provider said it
// was complete (a dropped connection, a truncated body). It is retryable.
var ErrStreamCut = errors.New("model stream cut before completion")

// ErrMalformed means the provider sent a response that could not be
// parsed. It is not retryable.
var ErrMalformed = errors.New("malformed response from model provider")

// APIError is an HTTP error answer from a provider.
type APIError struct {
	Provider   string
	StatusCode int
	// RetryAfter is the server's Retry-After, zero when absent.
	RetryAfter time.Duration
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s API: HTTP %d: %s", e.Provider, e.StatusCode, e.Message)
}

// Retryable reports whether the status is worth another try: rate limits,
// overload and server errors.
func (e *APIError) Retryable() bool {
	switch e.StatusCode {
	case 408, 409, 425, 429, 529:
		return true
	}
	return e.StatusCode >= 500
}

// IsRetryable reports whether err is transient: a retryable API status, a
// cut stream, a connection closed without an answer (EOF) or reset or
// refused. A cancelled or expired context is never retryable.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Retryable()
	}
	if errors.Is(err, ErrStreamCut) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// retryAfter returns the server-requested wait carried by err, if any.
func retryAfter(err error) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.RetryAfter
	}
	return 0
}

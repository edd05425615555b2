package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/redact"
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

// MaxErrorText bounds the text of a provider's error body kept in an
// APIError's Message, so that an HTML error page from a proxy does not
// flood the terminal, the streams and the logs.
const MaxErrorText = 300

// ErrorText makes a provider's error text (an error body or its message)
// fit for an APIError's Message: secrets masked first (the credential
// formats of package redact and the given values, such as the
// provider's own key), then cut to max bytes (at a character boundary,
// with "…"). The order matters: a key cut in half is no longer
// recognisable, and its prefix would pass every redactor after this one,
// into the terminal, the event streams, the store and the logs.
func ErrorText(text string, max int, secrets ...string) string {
	text = redact.New(redact.Options{Secrets: secrets}).String(strings.TrimSpace(text))
	if len(text) <= max {
		return text
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
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

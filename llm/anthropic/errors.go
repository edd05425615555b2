package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/avaagent/ava/llm"
)

// requestError classifies a failure to get a response started; key is
// masked in the error's text.
func requestError(ctx context.Context, err error, key string) error {
	if ctx.Err() != nil {
		return contextError(ctx, err)
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return toAPIError(apiErr, key)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("anthropic: %w: connection closed before the response: %w", llm.ErrStreamCut, err)
	}
	return fmt.Errorf("anthropic: send request: %w", err)
}

// streamError classifies a failure while reading the event stream; key
// is masked in the error's text.
func streamError(ctx context.Context, err error, key string) error {
	if ctx.Err() != nil {
		return contextError(ctx, err)
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return toAPIError(apiErr, key)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
		return fmt.Errorf("anthropic: %w: event is not valid JSON: %w", llm.ErrMalformed, err)
	}
	return fmt.Errorf("anthropic: %w: %w", llm.ErrStreamCut, err)
}

// contextError reports a done ctx: the result matches both ctx.Err() and
// the cancellation cause, whatever the transport made of it.
func contextError(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, ctx.Err()) {
		return fmt.Errorf("anthropic: stream aborted: %w", ctx.Err())
	}
	return fmt.Errorf("anthropic: stream aborted: %w: %w", ctx.Err(), cause)
}

// errorStatus is the HTTP status of an error type the API reports inside
// a stream, where the HTTP status is already 200.
var errorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// toAPIError converts the SDK's error: an HTTP error answer, or an
// "event: error" in a stream (whose status says 200 and whose error type
// gives the real one).
func toAPIError(e *anthropic.Error, key string) *llm.APIError {
	out := &llm.APIError{Provider: "anthropic", StatusCode: e.StatusCode, Message: errorMessage(e, key)}
	if out.StatusCode < 400 {
		out.StatusCode = http.StatusInternalServerError
		if s, ok := errorStatus[string(e.Type())]; ok {
			out.StatusCode = s
		}
	}
	if e.Response != nil {
		out.RetryAfter = llm.ParseRetryAfter(e.Response.Header, time.Now())
	}
	return out
}

// errorMessage is "type: message" from the API's error envelope, else the
// body as sent, else the status text; key and every credential are
// masked before the text is shortened (llm.ErrorText).
func errorMessage(e *anthropic.Error, key string) string {
	raw := e.RawJSON()
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &env) == nil && env.Error.Message != "" {
		msg := env.Error.Message
		if env.Error.Type != "" {
			msg = env.Error.Type + ": " + msg
		}
		return llm.ErrorText(msg, llm.MaxErrorText, key)
	}
	if msg := llm.ErrorText(raw, llm.MaxErrorText, key); msg != "" {
		return msg
	}
	return http.StatusText(e.StatusCode)
}

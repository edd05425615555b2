package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/avaagent/ava/llm"
)

// exchange is what the observe middleware learns about one HTTP exchange,
// beyond what the SDK's stream reports: the response (status, headers,
// body of an error), whether "data: [DONE]" arrived, and the error the
// body read failed with. The SDK reads the body in the goroutine that
// called Stream, so no locking is needed.
type exchange struct {
	resp    *http.Response
	done    bool
	readErr error
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

func (ex *exchange) sawDone() bool { return ex.done }

// observe is an SDK middleware recording the exchange carried by the
// request's context and watching a successful response's body.
func observe(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil || resp == nil {
		return resp, err
	}
	ex.resp = resp
	if resp.StatusCode < 400 && resp.Body != nil {
		resp.Body = &bodyWatch{ReadCloser: resp.Body, ex: ex}
	}
	return resp, err
}

// maxWatchedLine bounds the bytes kept of the current line: only short
// lines can be "data: [DONE]".
const maxWatchedLine = 32

// bodyWatch notes a "data: [DONE]" line and the body's read error.
type bodyWatch struct {
	io.ReadCloser
	ex       *exchange
	line     []byte
	overflow bool
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.scan(p[:n])
	if err != nil && !errors.Is(err, io.EOF) {
		b.ex.readErr = err
	}
	return n, err
}

// maxDrain bounds what Close reads after [DONE] to let the connection be
// reused; a well-behaved server has only the end of the chunked body left.
const maxDrain = 4 << 10

// Close reads what is left of a finished stream (at most maxDrain bytes)
// before closing, so the HTTP/1 connection goes back to the pool instead
// of being torn down: a new loopback connection costs more than the rest
// of a request. The caller bounds the wait (see Stream).
func (b *bodyWatch) Close() error {
	if b.ex.done && b.ex.readErr == nil {
		_, _ = io.CopyN(io.Discard, b.ReadCloser, maxDrain)
	}
	return b.ReadCloser.Close()
}

func (b *bodyWatch) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if b.overflow || len(b.line)+len(seg) > maxWatchedLine {
			b.overflow = true
			b.line = b.line[:0]
		} else {
			b.line = append(b.line, seg...)
		}
		if i < 0 {
			return
		}
		line := string(bytes.TrimRight(b.line, "\r"))
		if !b.overflow && (line == "data: [DONE]" || line == "data:[DONE]") {
			b.ex.done = true
		}
		b.line, b.overflow = b.line[:0], false
		p = p[i+1:]
	}
}

// streamError classifies the error that ended a stream.
func (p *Provider) streamError(ctx context.Context, ex *exchange, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	var sdkErr *openai.Error
	if errors.As(err, &sdkErr) {
		var body []byte
		if sdkErr.Response != nil && sdkErr.Response.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(sdkErr.Response.Body, 64<<10))
		}
		msg := sdkErr.Message
		if sdkErr.Code != "" && msg != "" {
			msg += " (" + sdkErr.Code + ")"
		}
		return p.apiError(sdkErr.StatusCode, headerOf(sdkErr.Response), msg, body)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return p.inStreamError(streamErr.Event.Data)
	}
	switch {
	case ex.resp == nil:
		return fmt.Errorf("send request: %w", err)
	case ex.resp.StatusCode >= 400:
		// An error body the SDK could not parse (an HTML page from a proxy).
		var body []byte
		if ex.resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(ex.resp.Body, 64<<10))
		}
		return p.apiError(ex.resp.StatusCode, ex.resp.Header, "", body)
	case ex.readErr != nil && errors.Is(err, ex.readErr):
		return fmt.Errorf("read: %w: %w", llm.ErrStreamCut, err)
	default:
		// The body was read fine, so decoding a chunk failed.
		return fmt.Errorf("decode chunk: %w: %w", llm.ErrMalformed, err)
	}
}

// ctxError returns the error for a stream aborted by ctx: it matches both
// ctx.Err() and the cancellation cause when they differ.
func ctxError(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, ctx.Err()) {
		return fmt.Errorf("aborted: %w", ctx.Err())
	}
	return fmt.Errorf("aborted: %w: %w", cause, ctx.Err())
}

func headerOf(r *http.Response) http.Header {
	if r == nil {
		return nil
	}
	return r.Header
}

// apiError builds the *llm.APIError for an HTTP error answer. msg may be
// empty, in which case it is taken from body.
func (p *Provider) apiError(status int, h http.Header, msg string, body []byte) error {
	if msg == "" {
		msg = errorMessage(body)
	}
	msg = llm.ErrorText(msg, llm.MaxErrorText, p.key)
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &llm.APIError{Provider: p.name, StatusCode: status, RetryAfter: llm.ParseRetryAfter(h, time.Now()), Message: msg}
}

// wireError is the error object OpenAI-compatible servers send, in an
// error answer or inside a stream.
type wireError struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// errorMessage extracts a message from an error body: the JSON error's
// message, else the body's text. The caller masks and shortens it
// (llm.ErrorText).
func errorMessage(body []byte) string {
	var w wireError
	if json.Unmarshal(body, &w) == nil && w.Error.Message != "" {
		return w.Error.Message
	}
	return strings.TrimSpace(string(body))
}

// inStreamError maps an error object sent inside a 200 stream. It carries
// no HTTP status, so one is inferred from its code or type; anything
// unrecognised counts as a server failure (500), which is retryable.
func (p *Provider) inStreamError(data []byte) error {
	var w wireError
	_ = json.Unmarshal(data, &w)
	msg := w.Error.Message
	if msg == "" {
		msg = errorMessage(data)
	}
	msg = llm.ErrorText(msg, llm.MaxErrorText, p.key)
	apiErr := &llm.APIError{Provider: p.name, StatusCode: inferStatus(w.Error.Type, w.Error.Code), Message: msg}
	return fmt.Errorf("error sent inside the stream: %w", apiErr)
}

// inferStatus guesses the HTTP status of an in-stream error.
func inferStatus(typ string, code json.RawMessage) int {
	var n int
	if json.Unmarshal(code, &n) == nil && n >= 400 && n <= 599 {
		return n
	}
	var s string
	_ = json.Unmarshal(code, &s)
	kind := strings.ToLower(typ + " " + s)
	switch {
	case strings.Contains(kind, "rate_limit"):
		return http.StatusTooManyRequests
	case strings.Contains(kind, "overloaded"):
		return 529
	case strings.Contains(kind, "authentication"), strings.Contains(kind, "invalid_api_key"):
		return http.StatusUnauthorized
	case strings.Contains(kind, "permission"):
		return http.StatusForbidden
	case strings.Contains(kind, "invalid_request"), strings.Contains(kind, "invalid_prompt"), strings.Contains(kind, "context_length"):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

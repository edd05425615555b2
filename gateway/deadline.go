package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultAPITimeout is the deadline of an API request when neither
// Options.APITimeout nor the configuration (AVA_API_TIMEOUT) sets one.
const DefaultAPITimeout = 15 * time.Second

// retryAfter is the Retry-After of a 503: how long a client should wait
// before it tries again.
const retryAfter = 5 * time.Second

// deadlineError is the cause of a request's context when its deadline
// passed: the store (or whatever the request waited for) did not answer
// in time. It is a context.DeadlineExceeded, so the store and the core
// classify it as unavailability (store.Unavailable).
type deadlineError struct{ limit time.Duration }

func (e deadlineError) Error() string {
	return fmt.Sprintf("the database did not answer within %s (AVA_API_TIMEOUT); nothing was done, try again later", e.limit)
}

func (e deadlineError) Unwrap() error { return context.DeadlineExceeded }

// withDeadline bounds ctx by the API's deadline, with deadlineError as
// its cause.
func (s *Server) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.opt.APITimeout, deadlineError{s.opt.APITimeout})
}

// passedDeadline returns err in the words of the deadline when ctx's
// deadline passed (its cause is deadlineError), else err.
func passedDeadline(ctx context.Context, err error) error {
	var de deadlineError
	if cause := context.Cause(ctx); err != nil && errors.As(cause, &de) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

// bounded answers a request within the API's deadline
// (Options.APITimeout): the handler runs with a context that ends at
// the deadline, so the store calls it makes give up then and their
// writes are not committed; if it has not answered by then (a wait that
// ignores its context), the request is answered 503 with Retry-After
// and the handler's own answer, when it comes, is dropped. An error
// answer made after the deadline passed is replaced by that 503 too, so
// the client reads one cause whichever came first. Event streams and
// MCP are registered without it (router.stream): they bound their own
// store reads.
func (s *Server) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := s.withDeadline(r.Context())
		defer cancel()
		bw := &bufferedWriter{w: w, header: http.Header{}}
		done := make(chan any, 1)
		s.handlers.Add(1)
		go func() {
			defer s.handlers.Done()
			defer func() { done <- recover() }()
			next.ServeHTTP(bw, r.WithContext(ctx))
		}()
		select {
		case p := <-done:
			if p != nil {
				panic(p)
			}
			if cause := context.Cause(ctx); errors.As(cause, new(deadlineError)) && bw.code >= 500 {
				fail(w, cause)
				return
			}
			bw.flush()
		case <-ctx.Done():
			if cause := context.Cause(ctx); errors.As(cause, new(deadlineError)) {
				bw.abandon()
				s.log.Warn("API request answered 503 at its deadline", "method", r.Method, "path", r.URL.Path, "timeout", s.opt.APITimeout)
				fail(w, cause)
				return
			}
			// The request's own context ended: the client went away, or
			// the handler closed the body's read side (refuse does, and
			// net/http then cancels the request). The handler, whose
			// context ended too, answers what it has; writing nothing
			// here made net/http send an empty 200 in its place (a
			// refused login read as accepted).
			if p := <-done; p != nil {
				panic(p)
			}
			bw.flush()
		}
	})
}

// bufferedWriter holds a bounded handler's answer until it ends, so
// that bounded can answer in its place at the deadline; writes after
// that fail with http.ErrHandlerTimeout.
type bufferedWriter struct {
	w         http.ResponseWriter
	mu        sync.Mutex
	header    http.Header
	code      int
	body      bytes.Buffer
	abandoned bool
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(code int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.code == 0 && !b.abandoned {
		b.code = code
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.abandoned {
		return 0, http.ErrHandlerTimeout
	}
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (a read
// deadline on the body, see bodyDeadline and refuse).
func (b *bufferedWriter) Unwrap() http.ResponseWriter { return b.w }

// abandon drops whatever the handler writes from now on.
func (b *bufferedWriter) abandon() {
	b.mu.Lock()
	b.abandoned = true
	b.mu.Unlock()
}

// flush writes the handler's answer.
func (b *bufferedWriter) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	dst := b.w.Header()
	for k, v := range b.header {
		dst[k] = v
	}
	if b.code == 0 {
		b.code = http.StatusOK
	}
	b.w.WriteHeader(b.code)
	_, _ = b.w.Write(b.body.Bytes())
}

// setRetryAfter adds Retry-After to a 503 answer.
func setRetryAfter(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
}

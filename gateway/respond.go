package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// writeJSON writes v as the response with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// writeError writes {"error": msg} with status code.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, client.ErrorBody{Error: msg})
}

// fail writes err with the status it maps to. A 503 (the store
// unavailable, the request's deadline passed, the daemon draining)
// carries Retry-After.
func fail(w http.ResponseWriter, err error) {
	code := statusOf(err)
	if code == http.StatusServiceUnavailable {
		setRetryAfter(w)
	}
	writeError(w, code, err.Error())
}

// badRequest is an error in what the client sent (400).
type badRequest struct{ msg string }

func (e badRequest) Error() string { return e.msg }

func badRequestf(format string, a ...any) error { return badRequest{fmt.Sprintf(format, a...)} }

// errDraining refuses new work while the daemon shuts down.
var errDraining = errors.New("the daemon is shutting down: no new work is taken")

// errBodyTimeout is a request body that did not arrive within
// Timeouts.Body (408).
var errBodyTimeout = errors.New("the request body did not arrive in time")

// statusOf maps an error to its HTTP status, in one place, over the
// core's one classification (ava.KindOf).
func statusOf(err error) int {
	var br badRequest
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &br):
		return http.StatusBadRequest
	case errors.Is(err, errBodyTimeout):
		return http.StatusRequestTimeout
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errDraining):
		return http.StatusServiceUnavailable
	}
	return kindStatus[ava.KindOf(err)]
}

// kindStatus is the HTTP status of each kind of failure.
var kindStatus = map[ava.Kind]int{
	ava.Internal:    http.StatusInternalServerError,
	ava.Invalid:     http.StatusBadRequest,
	ava.NotFound:    http.StatusNotFound,
	ava.Conflict:    http.StatusConflict,
	ava.Busy:        http.StatusConflict,
	ava.Unclear:     http.StatusUnprocessableEntity,
	ava.Limit:       http.StatusTooManyRequests,
	ava.Budget:      http.StatusPaymentRequired,
	ava.Forbidden:   http.StatusForbidden,
	ava.Full:        http.StatusInsufficientStorage,
	ava.Unavailable: http.StatusServiceUnavailable,
}

// emptyID reports an ID that is blank or only its kind's prefix ("S-",
// "P-", "Q-"): a mistake of the client, never a lookup.
func emptyID(id string) bool {
	id = strings.TrimSpace(id)
	return id == "" || len(id) == 2 && id[1] == '-' && strings.ContainsRune("SPQspq", rune(id[0]))
}

// pathID is the request's {id}, or a 400 error when it is empty.
func pathID(r *http.Request, what string) (string, error) {
	id := r.PathValue("id")
	if emptyID(id) {
		return "", badRequestf("%s ID %q is empty: give one (or a unique prefix) after the dash", what, id)
	}
	return id, nil
}

// decode reads a JSON body of at most max bytes into v, refusing
// unknown fields and trailing data.
func decode(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, max))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("body over %d bytes: %w", max, err)
		}
		if isTimeout(err) {
			return fmt.Errorf("%w: %w", errBodyTimeout, err)
		}
		if errors.Is(err, io.EOF) {
			return badRequestf("empty body: a JSON object is required")
		}
		return badRequestf("bad JSON body: %v", err)
	}
	if dec.More() {
		return badRequestf("bad JSON body: data after the object")
	}
	return nil
}

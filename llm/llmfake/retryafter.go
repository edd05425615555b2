package llmfake

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
)

// CheckRetryAfter is the shared check that a provider reads Retry-After
// by llm.ParseRetryAfter: call makes one request to a fake server that
// answers 429 with the given Retry-After and returns the provider's error.
// An absurd wait must be capped, not overflowed into a negative one.
func CheckRetryAfter(t *testing.T, call func(retryAfter string) error) {
	t.Helper()
	for _, v := range []string{"2.5", "-3", "1e300", "Inf"} {
		var apiErr *llm.APIError
		if err := call(v); !errors.As(err, &apiErr) {
			t.Fatalf("Retry-After %q: err = %v, want *llm.APIError", v, err)
		}
		want := llm.ParseRetryAfter(http.Header{"Retry-After": {v}}, time.Now())
		if apiErr.RetryAfter != want || apiErr.RetryAfter < 0 {
			t.Errorf("Retry-After %q: got %v, want %v", v, apiErr.RetryAfter, want)
		}
	}
}

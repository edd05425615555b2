package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
)

// TestPlainTextErrorMaskedBeforeCut answers a plain-text 500 whose body
// puts the provider's own key, or a key any pattern knows, across the
// 300-byte cut: the error holds no prefix of either.
func TestPlainTextErrorMaskedBeforeCut(t *testing.T) {
	const own = "own-provider-key-0a1b2c3d4e5f6a7b8c9d"
	for name, key := range map[string]string{"own key": own, "pattern key": "sk-ant-api03-Abcdefghijklmnopqrstuvwxyz0123456789"} {
		at := 300 - 10
		body := strings.Repeat("x", at-1) + " " + key + " and more"
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(body))
		}))
		p, err := anthropic.New(anthropic.Config{APIKey: own, BaseURL: srv.URL, HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Stream(context.Background(), userRequest("hi"), nil)
		srv.Close()
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
			t.Fatalf("%s: err = %v, want an HTTP 500 APIError", name, err)
		}
		if strings.Contains(err.Error(), key[:8]) {
			t.Errorf("%s: the error keeps the key's prefix %q: %s", name, key[:8], err)
		}
	}
}

package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/openai"
)

// ownKey is the provider's key in a form no pattern knows; patternKey
// is another credential any redactor recognises whole.
const (
	ownKey     = "own-provider-key-0a1b2c3d4e5f6a7b8c9d"
	patternKey = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789ABCD"
)

// TestPlainTextErrorMaskedBeforeCut answers a plain-text 500 whose body
// puts a key across the 300-byte cut: the error holds no prefix of it,
// whichever side of the cut it starts.
func TestPlainTextErrorMaskedBeforeCut(t *testing.T) {
	for name, key := range map[string]string{"own key": ownKey, "pattern key": patternKey} {
		for _, at := range []int{300 - 10, 300 - 1, 300 - len(key) + 4} {
			body := strings.Repeat("x", at-1) + " " + key + " more text after the key"
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusInternalServerError)
				w.Write([]byte(body))
			}))
			p, err := openai.New(openai.Config{Name: "openrouter", APIKey: ownKey, BaseURL: srv.URL + "/api/v1", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Stream(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}}, nil)
			srv.Close()
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
				t.Fatalf("%s at %d: err = %v, want an HTTP 500 APIError", name, at, err)
			}
			if prefix := key[:8]; strings.Contains(err.Error(), prefix) {
				t.Errorf("%s at %d: the error keeps the key's prefix %q: %s", name, at, prefix, err)
			}
			if len(apiErr.Message) > 300+len("…") {
				t.Errorf("%s at %d: message of %d bytes, want at most %d", name, at, len(apiErr.Message), 300)
			}
		}
	}
}

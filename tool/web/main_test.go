package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// serve starts a loopback server closed at the end of the test.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// run calls tl with args marshalled to JSON and fails on a Go error.
func run(t *testing.T, tl tool.Tool, args any) tool.Result {
	t.Helper()
	res, err := runErr(context.Background(), t, tl, args)
	if err != nil {
		t.Fatalf("%s: unexpected Go error: %v", tl.Name(), err)
	}
	return res
}

func runErr(ctx context.Context, t *testing.T, tl tool.Tool, args any) (tool.Result, error) {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	return tl.Run(ctx, json.RawMessage(raw))
}

// wantOK fails unless res succeeded and contains every substring.
func wantOK(t *testing.T, res tool.Result, subs ...string) {
	t.Helper()
	if res.IsError {
		t.Fatalf("want success, got error result:\n%s", res.Output)
	}
	wantContains(t, res, subs...)
}

// wantError fails unless res is an error result containing every
// substring.
func wantError(t *testing.T, res tool.Result, subs ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want error result, got success:\n%s", res.Output)
	}
	wantContains(t, res, subs...)
}

func wantContains(t *testing.T, res tool.Result, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(res.Output, s) {
			t.Errorf("output lacks %q:\n%s", s, res.Output)
		}
	}
}

// sleepUntilGone blocks a handler until the client goes away (or a
// safety limit), so a timed-out request leaves nothing behind.
func sleepUntilGone(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

func TestSchemasAndNames(t *testing.T) {
	tools := New(Config{}).All()
	wantRequired := map[string]string{"web_search": "query", "http_get": "url", "read_webpages": "urls"}
	if len(tools) != len(wantRequired) {
		t.Fatalf("All() has %d tools, want %d", len(tools), len(wantRequired))
	}
	if _, err := tool.NewRegistry(tools...); err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		var s struct {
			Type       string                    `json:"type"`
			Required   []string                  `json:"required"`
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(tl.Schema(), &s); err != nil {
			t.Fatalf("%s schema: %v", tl.Name(), err)
		}
		req, ok := wantRequired[tl.Name()]
		if !ok {
			t.Fatalf("unexpected tool %q", tl.Name())
		}
		if s.Type != "object" || len(s.Required) != 1 || s.Required[0] != req {
			t.Errorf("%s schema: type %q required %v, want object requiring %q", tl.Name(), s.Type, s.Required, req)
		}
		for name, p := range s.Properties {
			if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", tl.Name(), name)
			}
		}
		if tl.Description() == "" {
			t.Errorf("%s has no description", tl.Name())
		}
	}
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHTTPClientOverride(t *testing.T) {
	var seen []string
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.Method+" "+r.URL.String())
		body := `{"results":[{"title":"Canned","url":"https://canned.example","content":"from the override"}]}`
		if r.URL.Host == "page.example" {
			body = "plain page"
		}
		return &http.Response{
			StatusCode: http.StatusOK, Status: "200 OK", Request: r,
			Header: http.Header{"Content-Type": {"text/plain"}},
			Body:   io.NopCloser(strings.NewReader(body)),
		}, nil
	})}
	tools := New(Config{HTTPClient: client, SearXNGURL: "http://searx.example"})
	wantOK(t, run(t, tools.Search(), map[string]any{"query": "q"}), "1. Canned", "from the override")
	wantOK(t, run(t, tools.HTTPGet(), map[string]any{"url": "https://page.example/x"}), "plain page")
	// Literal private IPs are still refused before the client is asked.
	wantError(t, run(t, tools.HTTPGet(), map[string]any{"url": "http://10.0.0.1/"}), "10.0.0.1 is a private address")
	want := []string{"GET http://searx.example/search?format=json&q=q", "GET https://page.example/x"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests = %q, want %q", seen, want)
	}
}

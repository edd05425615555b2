package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakeSearXNG serves the SearXNG JSON API with n results.
func fakeSearXNG(t *testing.T, n int) string {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/searx/search" {
			t.Errorf("SearXNG got %s %s, want GET /searx/search", r.Method, r.URL.Path)
		}
		if q, f := r.URL.Query().Get("q"), r.URL.Query().Get("format"); q != "go readability & markdown" || f != "json" {
			t.Errorf("SearXNG got q=%q format=%q", q, f)
		}
		var results []map[string]string
		for i := 1; i <= n; i++ {
			results = append(results, map[string]string{
				"title":   fmt.Sprintf("Result %d", i),
				"url":     fmt.Sprintf("https://example.com/%d", i),
				"content": fmt.Sprintf("Snippet   number\n%d.", i),
			})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"query": r.URL.Query().Get("q"), "results": results})
	})
	return srv.URL + "/searx/"
}

func TestSearchSearXNG(t *testing.T) {
	tools := New(Config{SearXNGURL: fakeSearXNG(t, 8)})
	res := run(t, tools.Search(), map[string]any{"query": "go readability & markdown", "max_results": 3})
	want := `Search results for "go readability & markdown" (via SearXNG):

1. Result 1
   https://example.com/1
   Snippet number 1.

2. Result 2
   https://example.com/2
   Snippet number 2.

3. Result 3
   https://example.com/3
   Snippet number 3.
`
	if res.IsError || res.Output != want {
		t.Errorf("output (error=%v):\n%s\nwant:\n%s", res.IsError, res.Output, want)
	}

	// Default is 5 results.
	res = run(t, tools.Search(), map[string]any{"query": "go readability & markdown"})
	wantOK(t, res, "5. Result 5")
	if strings.Contains(res.Output, "6. Result 6") {
		t.Errorf("default returned more than 5 results:\n%s", res.Output)
	}
}

func TestSearchSearXNGNoResults(t *testing.T) {
	res := run(t, New(Config{SearXNGURL: fakeSearXNG(t, 0)}).Search(), map[string]any{"query": "go readability & markdown"})
	wantOK(t, res, `No results for "go readability & markdown"`)
}

func TestSearchSearXNGJSONDisabled(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "Forbidden", http.StatusForbidden) })
	res := run(t, New(Config{SearXNGURL: srv.URL}).Search(), map[string]any{"query": "x"})
	wantError(t, res, "SearXNG: HTTP 403 Forbidden", "json format")
}

func TestSearchBrave(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Subscription-Token"); got != "brave-key" {
			t.Errorf("X-Subscription-Token = %q, want brave-key", got)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/res/v1/web/search" || r.URL.Query().Get("q") != "otter pricing" || r.URL.Query().Get("count") != "2" {
			t.Errorf("Brave got %s", r.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"search","web":{"results":[
			{"title":"Otter &amp; Co","url":"https://otter.ai/pricing","description":"Plans from <strong>$10</strong> a month"},
			{"title":"Descript","url":"https://descript.com","description":"Transcription &#x27;made easy&#x27;"}]}}`)
	})
	res := run(t, New(Config{BraveAPIKey: "brave-key", BraveBaseURL: srv.URL}).Search(),
		map[string]any{"query": "otter pricing", "max_results": 2})
	wantOK(t, res, "(via Brave)", "1. Otter & Co\n   https://otter.ai/pricing\n   Plans from $10 a month\n",
		"2. Descript\n   https://descript.com\n   Transcription 'made easy'\n")
}

func TestSearchTavily(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Query      string `json:"query"`
			MaxResults int    `json:"max_results"`
			APIKey     string `json:"api_key"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("Tavily body: %v", err)
		}
		bearer := r.Header.Get("Authorization") == "Bearer tvly-key"
		if !bearer && body.APIKey != "tvly-key" {
			http.Error(w, `{"detail":{"error":"Unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		if !bearer {
			t.Errorf("Authorization = %q, want Bearer tvly-key", r.Header.Get("Authorization"))
		}
		if r.Method != http.MethodPost || r.URL.Path != "/search" || body.Query != "subagents" || body.MaxResults != 4 {
			t.Errorf("Tavily got %s %s %+v", r.Method, r.URL.Path, body)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"query":"subagents","results":[{"title":"Harnesses","url":"https://anthropic.com/h","content":"Long-running agents","score":0.9}]}`)
	})
	res := run(t, New(Config{TavilyAPIKey: "tvly-key", TavilyBaseURL: srv.URL}).Search(),
		map[string]any{"query": "subagents", "max_results": 4})
	wantOK(t, res, "(via Tavily)", "1. Harnesses\n   https://anthropic.com/h\n   Long-running agents\n")
}

func TestSearchFallsBackToNextBackend(t *testing.T) {
	broken := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream engines down", http.StatusBadGateway)
	})
	tavily := serve(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"results":[{"title":"Backup hit","url":"https://b.example","content":"c"}]}`)
	})
	res := run(t, New(Config{SearXNGURL: broken.URL, TavilyAPIKey: "k", TavilyBaseURL: tavily.URL}).Search(), map[string]any{"query": "q"})
	wantOK(t, res, "(via Tavily)", "Backup hit")

	res = run(t, New(Config{SearXNGURL: broken.URL, BraveAPIKey: "sk-secret-123", BraveBaseURL: broken.URL}).Search(), map[string]any{"query": "q"})
	wantError(t, res, "SearXNG: HTTP 502 Bad Gateway: upstream engines down", "Brave: HTTP 502")
	if strings.Contains(res.Output, "sk-secret-123") {
		t.Errorf("API key in output: %s", res.Output)
	}
}

func TestSearchNotConfigured(t *testing.T) {
	res := run(t, New(Config{}).Search(), map[string]any{"query": "anything"})
	wantError(t, res, "not configured", "AVA_SEARXNG_URL", "BRAVE_API_KEY", "TAVILY_API_KEY")
}

// TestSearchOffSaysWhy: with the web_search setting off (or the
// provider's), the tool says so rather than "not configured".
func TestSearchOffSaysWhy(t *testing.T) {
	res := run(t, New(Config{SearchOff: "web_search is off here (web_search: off in Ava's configuration)"}).Search(), map[string]any{"query": "anything"})
	wantError(t, res, "web_search is off here")
	if strings.Contains(res.Output, "not configured") {
		t.Errorf("output: %s", res.Output)
	}
}

func TestSearchBadConfigURL(t *testing.T) {
	res := run(t, New(Config{SearXNGURL: "searx.lan:8888"}).Search(), map[string]any{"query": "x"})
	wantError(t, res, `AVA_SEARXNG_URL="searx.lan:8888" is not an absolute http:// or https:// URL`)
}

func TestSearchBadArguments(t *testing.T) {
	tools := New(Config{SearXNGURL: "http://127.0.0.1:1"})
	cases := []struct {
		args any
		want string
	}{
		{`{}`, "query"},
		{map[string]any{"query": ""}, "query"},
		{map[string]any{"query": "   "}, "query is empty"},
		{map[string]any{"query": "x", "max_results": 21}, "max_results"},
		{map[string]any{"query": "x", "max_results": -1}, "max_results"},
		{map[string]any{"query": "x", "max_results": "five"}, "max_results"},
	}
	for _, c := range cases {
		wantError(t, run(t, tools.Search(), c.args), c.want)
	}
}

func TestSearchTimeout(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { sleepUntilGone(r) })
	res := run(t, New(Config{SearXNGURL: srv.URL, Timeout: 50 * time.Millisecond}).Search(), map[string]any{"query": "x"})
	wantError(t, res, "SearXNG: timed out after 50ms")
}

package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/avaagent/ava/tool"
)

// Bounds of web_search's max_results.
const (
	DefaultSearchResults = 5
	MaxSearchResults     = 20
)

// snippetLen caps one result's snippet.
const snippetLen = 500

type searchArgs struct {
	Query      string `json:"query" jsonschema:"What to search the web for, as you would type it into a search engine."`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"How many results to return: 1 to 20, default 5."`
}

// searchResult is one hit, whatever the backend.
type searchResult struct {
	Title, URL, Snippet string
}

// backend is one configured search service.
type backend struct {
	name   string
	search func(ctx context.Context, query string, n int) ([]searchResult, error)
}

func (t *Tools) searchTool() tool.Tool {
	desc := "Search the web and get a numbered list of results (title, URL, snippet). " +
		"Use it to find pages, then read the promising ones with read_webpages or http_get. " +
		"Snippets are short and may be outdated: read the page before relying on a fact."
	s, err := jsonschema.For[searchArgs](nil)
	if err != nil {
		panic(fmt.Sprintf("web_search: infer schema: %v", err))
	}
	s.Properties["query"].MinLength = jsonschema.Ptr(1)
	mr := s.Properties["max_results"]
	mr.Minimum = jsonschema.Ptr(1.0)
	mr.Maximum = jsonschema.Ptr(float64(MaxSearchResults))
	mr.Default = json.RawMessage(fmt.Sprint(DefaultSearchResults))
	return tool.NewFuncWithSchema("web_search", desc, s, t.runSearch)
}

// notConfigured is the message when no backend is set up.
var notConfigured = fmt.Sprintf("web_search is not configured: the operator must set %s (a SearXNG instance with the JSON format enabled), %s (Brave Search API) or %s (Tavily) in Ava's environment",
	EnvSearXNGURL, EnvBraveAPIKey, EnvTavilyAPIKey)

func (t *Tools) runSearch(ctx context.Context, args searchArgs) (tool.Result, error) {
	query := strings.TrimSpace(args.Query)
	if query == "" {
		return tool.Errorf("query is empty: say what to search for"), nil
	}
	n := args.MaxResults
	if n == 0 {
		n = DefaultSearchResults
	}
	if n < 1 || n > MaxSearchResults {
		return tool.Errorf("max_results is %d: it must be between 1 and %d", n, MaxSearchResults), nil
	}
	backends := t.backends()
	if len(backends) == 0 {
		if t.cfg.SearchOff != "" {
			return tool.Errorf("%s", t.cfg.SearchOff), nil
		}
		return tool.Errorf("%s", notConfigured), nil
	}
	var failures []string
	for _, b := range backends {
		results, err := b.search(ctx, query, n)
		if err == nil {
			return tool.Result{Output: capOutput(formatResults(query, b.name, results, n), t.cfg.MaxOutput)}, nil
		}
		if ctx.Err() != nil {
			return tool.Result{}, fmt.Errorf("web_search: %w", context.Cause(ctx))
		}
		t.cfg.Logger.DebugContext(ctx, "web search backend failed", "backend", b.name, "err", err)
		failures = append(failures, fmt.Sprintf("%s: %v", b.name, err))
	}
	return tool.Errorf("web search failed: %s", strings.Join(failures, "; ")), nil
}

// backends lists the configured backends in the order they are tried.
func (t *Tools) backends() []backend {
	var bs []backend
	if t.cfg.SearXNGURL != "" {
		bs = append(bs, backend{"SearXNG", t.searchSearXNG})
	}
	if t.cfg.BraveAPIKey != "" {
		bs = append(bs, backend{"Brave", t.searchBrave})
	}
	if t.cfg.TavilyAPIKey != "" {
		bs = append(bs, backend{"Tavily", t.searchTavily})
	}
	return bs
}

// formatResults renders hits as a numbered list.
func formatResults(query, backendName string, results []searchResult, n int) string {
	if len(results) > n {
		results = results[:n]
	}
	if len(results) == 0 {
		return fmt.Sprintf("No results for %q (via %s). Try other words.", query, backendName)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Search results for %q (via %s):\n", query, backendName)
	for i, r := range results {
		title := r.Title
		if title == "" {
			title = "(no title)"
		}
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, title, r.URL)
		if r.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", r.Snippet)
		}
	}
	return b.String()
}

// cleanText turns a backend's title or snippet (which may carry HTML
// such as <strong> and entities) into one line of plain text.
func cleanText(s string, max int) string {
	if strings.ContainsAny(s, "<&") {
		s = htmlText([]byte(s))
	} else {
		s = collapseSpace(s)
	}
	return excerpt(s, max)
}

// doJSON sends req with the configured timeout and decodes a 2xx JSON
// answer into out. Errors are messages for the model, never carrying
// credentials.
func (t *Tools) doJSON(req *http.Request, out any) error {
	ctx, cancel := context.WithTimeoutCause(req.Context(), t.cfg.Timeout, errTimeout)
	defer cancel()
	req = req.WithContext(ctx)
	req.Header.Set("User-Agent", t.cfg.UserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := t.searchClient.Do(req)
	if err != nil {
		return t.describeSearchError(ctx, err)
	}
	defer resp.Body.Close()
	body, _, err := readLimited(resp.Body, t.cfg.MaxBytes)
	if err != nil {
		return t.describeSearchError(ctx, fmt.Errorf("read response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &backendStatusError{
			code:   resp.StatusCode,
			status: resp.Status,
			body:   excerpt(collapseSpace(decodeText(body, resp.Header.Get("Content-Type"))), 300),
		}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode JSON response: %w", err)
	}
	return nil
}

// backendStatusError is a search backend's non-2xx answer.
type backendStatusError struct {
	code         int
	status, body string
}

func (e *backendStatusError) Error() string {
	if e.body == "" {
		return "HTTP " + e.status
	}
	return "HTTP " + e.status + ": " + e.body
}

// describeSearchError names a timeout plainly.
func (t *Tools) describeSearchError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return fmt.Errorf("timed out after %s", t.cfg.Timeout)
	}
	return err
}

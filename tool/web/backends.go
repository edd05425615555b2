package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// titleLen caps one result's title.
const titleLen = 200

// endpoint joins a configured base URL and a path, refusing a base that is
// not an absolute http(s) URL; setting names the variable to fix.
func endpoint(base, path, setting string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q is not an absolute http:// or https:// URL", setting, base)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(u.Path, path) {
		u.Path += path
	}
	u.RawQuery = ""
	return u, nil
}

type searxngResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

// searchSearXNG queries GET {base}/search?q=…&format=json.
func (t *Tools) searchSearXNG(ctx context.Context, query string, n int) ([]searchResult, error) {
	u, err := endpoint(t.cfg.SearXNGURL, "/search", EnvSearXNGURL)
	if err != nil {
		return nil, err
	}
	u.RawQuery = url.Values{"q": {query}, "format": {"json"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build SearXNG request: %w", err)
	}
	var resp searxngResponse
	if err := t.doJSON(req, &resp); err != nil {
		var se *backendStatusError
		if errors.As(err, &se) && se.code == http.StatusForbidden {
			return nil, fmt.Errorf("%w (is the json format enabled under search.formats in SearXNG's settings.yml?)", err)
		}
		return nil, err
	}
	out := make([]searchResult, 0, min(n, len(resp.Results)))
	for _, r := range resp.Results {
		if len(out) == n {
			break
		}
		out = append(out, newResult(r.Title, r.URL, r.Content))
	}
	return out, nil
}

type braveResponse struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		} `json:"results"`
	} `json:"web"`
}

// searchBrave queries the Brave Search API:
// GET {base}/res/v1/web/search?q=…&count=… with X-Subscription-Token.
func (t *Tools) searchBrave(ctx context.Context, query string, n int) ([]searchResult, error) {
	u, err := endpoint(t.cfg.BraveBaseURL, "/res/v1/web/search", EnvBraveBaseURL)
	if err != nil {
		return nil, err
	}
	u.RawQuery = url.Values{"q": {query}, "count": {strconv.Itoa(n)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build Brave request: %w", err)
	}
	req.Header.Set("X-Subscription-Token", t.cfg.BraveAPIKey)
	var resp braveResponse
	if err := t.doJSON(req, &resp); err != nil {
		return nil, err
	}
	out := make([]searchResult, 0, len(resp.Web.Results))
	for _, r := range resp.Web.Results {
		out = append(out, newResult(r.Title, r.URL, r.Description))
	}
	return out, nil
}

type tavilyRequest struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results"`
	// APIKey repeats the key in the body, which older Tavily API versions
	// read instead of the Authorization header.
	APIKey string `json:"api_key"`
}

type tavilyResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

// searchTavily queries POST {base}/search with a Bearer key.
func (t *Tools) searchTavily(ctx context.Context, query string, n int) ([]searchResult, error) {
	u, err := endpoint(t.cfg.TavilyBaseURL, "/search", EnvTavilyBaseURL)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(tavilyRequest{Query: query, MaxResults: n, APIKey: t.cfg.TavilyAPIKey})
	if err != nil {
		return nil, fmt.Errorf("encode Tavily request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build Tavily request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.cfg.TavilyAPIKey)
	var resp tavilyResponse
	if err := t.doJSON(req, &resp); err != nil {
		return nil, err
	}
	out := make([]searchResult, 0, len(resp.Results))
	for _, r := range resp.Results {
		out = append(out, newResult(r.Title, r.URL, r.Content))
	}
	return out, nil
}

// newResult cleans one hit's fields.
func newResult(title, link, snippet string) searchResult {
	return searchResult{
		Title:   cleanText(title, titleLen),
		URL:     strings.TrimSpace(link),
		Snippet: cleanText(snippet, snippetLen),
	}
}

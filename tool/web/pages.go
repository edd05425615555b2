package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/avaagent/ava/tool"
)

// MaxPages is how many URLs one read_webpages call may ask for.
const MaxPages = 10

// fetchWorkers bounds how many pages read_webpages fetches at once.
const fetchWorkers = 4

type httpGetArgs struct {
	URL string `json:"url" jsonschema:"Absolute http:// or https:// URL to fetch."`
}

type readWebpagesArgs struct {
	URLs []string `json:"urls" jsonschema:"One or more absolute http:// or https:// URLs to fetch, at most 10. Results come back in the same order."`
}

func (t *Tools) httpGetTool() tool.Tool {
	desc := fmt.Sprintf("Fetch one web page or text resource by URL. HTML pages come back as Markdown of the main content "+
		"(navigation and boilerplate removed); plain text, JSON and XML come back as text; images and other binary "+
		"content are refused. Output is cut at %d bytes per page, with a note saying where. "+
		"Use read_webpages to read several URLs at once, and web_search to find URLs.", t.cfg.MaxOutput)
	return tool.NewFunc("http_get", desc, t.runHTTPGet)
}

func (t *Tools) readWebpagesTool() tool.Tool {
	desc := fmt.Sprintf("Fetch up to %d web pages concurrently and return each as Markdown of its main content "+
		"(plain text, JSON and XML as text), in the order given. A page that fails gets its own error and the "+
		"others still come back. Output is cut at %d bytes per page, with a note saying where.", MaxPages, t.cfg.MaxOutput)
	s, err := jsonschema.For[readWebpagesArgs](nil)
	if err != nil {
		panic(fmt.Sprintf("read_webpages: infer schema: %v", err))
	}
	urls := s.Properties["urls"]
	urls.Type, urls.Types = "array", nil // a list, not null
	urls.MaxItems = jsonschema.Ptr(MaxPages)
	return tool.NewFuncWithSchema("read_webpages", desc, s, t.runReadWebpages)
}

func (t *Tools) runHTTPGet(ctx context.Context, args httpGetArgs) (tool.Result, error) {
	u, err := t.parseFetchURL(args.URL)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	p, err := t.fetch(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, fmt.Errorf("http_get %s: %w", u.Redacted(), context.Cause(ctx))
		}
		return tool.Errorf("%v", err), nil
	}
	return tool.Result{Output: t.formatPage(u, p)}, nil
}

// pageResult is one URL's outcome in read_webpages.
type pageResult struct {
	page *page
	err  error
}

func (t *Tools) runReadWebpages(ctx context.Context, args readWebpagesArgs) (tool.Result, error) {
	if len(args.URLs) == 0 {
		return tool.Errorf("urls is empty: give at least one absolute http:// or https:// URL"), nil
	}
	if len(args.URLs) > MaxPages {
		return tool.Errorf("urls has %d entries: at most %d pages per call", len(args.URLs), MaxPages), nil
	}
	results := t.fetchAll(ctx, args.URLs)
	if ctx.Err() != nil {
		return tool.Result{}, fmt.Errorf("read_webpages: %w", context.Cause(ctx))
	}
	return t.formatPages(args.URLs, results), nil
}

// fetchAll fetches urls with at most fetchWorkers at a time and returns
// the results in input order. It reports progress as pages complete and
// returns once every worker has stopped.
func (t *Tools) fetchAll(ctx context.Context, urls []string) []pageResult {
	results := make([]pageResult, len(urls))
	jobs := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	for range min(fetchWorkers, len(urls)) {
		wg.Go(func() {
			for i := range jobs {
				results[i] = t.fetchOne(ctx, urls[i])
				mu.Lock()
				done++
				tool.Progress(ctx, fmt.Sprintf("fetched %d of %d pages", done, len(urls)))
				mu.Unlock()
			}
		})
	}
	for i := range urls {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return results
}

// fetchOne validates and fetches one URL.
func (t *Tools) fetchOne(ctx context.Context, raw string) pageResult {
	u, err := t.parseFetchURL(raw)
	if err != nil {
		return pageResult{err: err}
	}
	p, err := t.fetch(ctx, u)
	return pageResult{page: p, err: err}
}

// formatPages lays out read_webpages results; the call is an error only
// when every page failed.
func (t *Tools) formatPages(urls []string, results []pageResult) tool.Result {
	failed := 0
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n\n---\n\n")
		}
		fmt.Fprintf(&b, "## [%d] %s\n", i+1, strings.TrimSpace(urls[i]))
		if r.err != nil {
			failed++
			fmt.Fprintf(&b, "Error: %v", r.err)
			continue
		}
		u, _ := url.Parse(strings.TrimSpace(urls[i]))
		b.WriteString(t.formatPage(u, r.page))
	}
	head := fmt.Sprintf("Read %d of %d pages", len(urls)-failed, len(urls))
	if failed > 0 {
		head += fmt.Sprintf(" (%d failed)", failed)
	}
	return tool.Result{Output: head + ".\n\n" + b.String(), IsError: failed == len(urls)}
}

// formatPage renders one fetched page: a short header, then the text cut
// to MaxOutput.
func (t *Tools) formatPage(requested *url.URL, p *page) string {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", p.finalURL)
	if requested != nil && requested.Redacted() != p.finalURL {
		fmt.Fprintf(&b, "Redirected from: %s\n", requested.Redacted())
	}
	if p.title != "" {
		fmt.Fprintf(&b, "Title: %s\n", p.title)
	}
	if p.mediaType == "text/html" || p.mediaType == "application/xhtml+xml" {
		fmt.Fprintf(&b, "Content-Type: %s (main content as Markdown)\n", p.mediaType)
	} else {
		fmt.Fprintf(&b, "Content-Type: %s\n", p.mediaType)
	}
	if p.bodyTruncated {
		fmt.Fprintf(&b, "[response body truncated: only the first %d bytes were read]\n", t.cfg.MaxBytes)
	}
	if note := p.hidden.String(); note != "" {
		b.WriteString(note + "\n")
	}
	b.WriteString("\n")
	text := p.text
	if strings.TrimSpace(text) == "" {
		text = "(the page has no readable text)"
	}
	b.WriteString(capOutput(text, t.cfg.MaxOutput))
	return b.String()
}

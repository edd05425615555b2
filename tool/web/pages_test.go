package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/tool"
)

const articlePage = `<!DOCTYPE html>
<html><head><title>Otter pricing explained | Example News</title>
<style>body { color: red }</style><script>var tracking = "beacon";</script></head>
<body>
<header><nav class="menu"><ul>
  <li><a href="/">Home</a></li><li><a href="/careers">Careers at Example</a></li>
  <li><a href="/shop">Shop our merchandise</a></li><li><a href="/login">Sign in</a></li>
</ul></nav></header>
<div class="sidebar"><a href="/promo">Subscribe to the promo newsletter</a></div>
<main><article>
  <h1>Otter pricing explained</h1>
  <p>Otter offers a free tier with three hundred minutes of transcription each month, which covers
  most casual users who record a handful of meetings. The limits reset on the first of every month
  and unused minutes do not roll over, so heavy users should plan their recordings carefully.</p>
  <h2>Paid plans</h2>
  <p>The <strong>Pro plan</strong> costs ten dollars a month when billed annually and raises the limit to
  twelve hundred minutes. It adds custom vocabulary, advanced search and the ability to export
  transcripts as text files, which researchers and journalists tend to appreciate the most.</p>
  <p>The Business plan adds admin features, usage analytics and priority support. Teams that
  transcribe interviews every day often find that the per-seat pricing pays for itself within weeks,
  according to the <a href="/reports/2024">annual transcription report</a> published by the company.</p>
</article></main>
<footer><p>Cookie settings</p><p>Copyright Example Inc.</p></footer>
</body></html>`

func TestHTTPGetHTMLKeepsArticleDropsNav(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, articlePage)
	})
	res := run(t, New(Config{AllowPrivate: true}).HTTPGet(), map[string]any{"url": srv.URL + "/otter"})
	wantOK(t, res,
		"URL: "+srv.URL+"/otter",
		"Title: Otter pricing explained",
		"main content as Markdown",
		"free tier with three hundred minutes",
		"## Paid plans",
		"**Pro plan**",
		"[annual transcription report]("+srv.URL+"/reports/2024)",
	)
	for _, junk := range []string{"Careers at Example", "Shop our merchandise", "Sign in", "Cookie settings", "tracking", "color: red", "<p>"} {
		if strings.Contains(res.Output, junk) {
			t.Errorf("output keeps %q:\n%s", junk, res.Output)
		}
	}
}

func TestHTTPGetFallsBackToWholeBody(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Index</title></head><body><ul><li><a href="/a">First file</a></li><li><a href="/b">Second file</a></li></ul></body></html>`)
	})
	res := run(t, New(Config{AllowPrivate: true}).HTTPGet(), map[string]any{"url": srv.URL})
	wantOK(t, res, "Title: Index", "[First file]("+srv.URL+"/a)", "[Second file]("+srv.URL+"/b)")
}

func TestHTTPGetTextTypes(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"name": "ava", "tags": ["<b>not html</b>"]}`)
		case "/xml":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, `<rss><channel><title>Feed</title></channel></rss>`)
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9 au lait"))
		case "/untyped":
			w.Header()["Content-Type"] = nil // no type: sniffed
			fmt.Fprint(w, "just some words")
		}
	})
	tools := New(Config{AllowPrivate: true})
	cases := []struct{ path, want, ctype string }{
		{"/json", `{"name": "ava", "tags": ["<b>not html</b>"]}`, "application/json"},
		{"/xml", `<rss><channel><title>Feed</title></channel></rss>`, "application/rss+xml"},
		{"/latin1", "café au lait", "text/plain"},
		{"/untyped", "just some words", "text/plain"},
	}
	for _, c := range cases {
		res := run(t, tools.HTTPGet(), map[string]any{"url": srv.URL + c.path})
		wantOK(t, res, c.want, "Content-Type: "+c.ctype+"\n")
	}
}

func TestHTTPGetBinaryRefused(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/typed.png" {
			w.Header().Set("Content-Type", "image/png")
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		w.Write(png)
	})
	tools := New(Config{AllowPrivate: true})
	for _, path := range []string{"/typed.png", "/sniffed"} {
		res := run(t, tools.HTTPGet(), map[string]any{"url": srv.URL + path})
		wantError(t, res, "image/png", "binary")
		if strings.Contains(res.Output, "PNG") {
			t.Errorf("%s: binary bytes in output: %q", path, res.Output)
		}
	}
}

func TestHTTPGetBadArguments(t *testing.T) {
	tools := New(Config{AllowPrivate: true})
	cases := []struct {
		args any
		want string
	}{
		{`{}`, "url"},
		{`{"url": 5}`, "url"},
		{`not json`, "not valid JSON"},
		{map[string]any{"url": ""}, "the URL is empty"},
		{map[string]any{"url": "example.com/page"}, "has no scheme"},
		{map[string]any{"url": "ftp://example.com/file.txt"}, "ftp scheme: only http and https"},
		{map[string]any{"url": "file:///etc/passwd"}, "only http and https"},
		{map[string]any{"url": "http://"}, "has no host"},
		{map[string]any{"url": "http://exa mple.com/"}, "not a valid URL"},
	}
	for _, c := range cases {
		wantError(t, run(t, tools.HTTPGet(), c.args), c.want)
	}
}

func TestHTTPGetTimeout(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { sleepUntilGone(r) })
	start := time.Now()
	res := run(t, New(Config{AllowPrivate: true, Timeout: 50 * time.Millisecond}).HTTPGet(), map[string]any{"url": srv.URL})
	wantError(t, res, "timed out after 50ms")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %s", d)
	}
}

// A body that stalls after the headers also hits the per-request timeout.
func TestHTTPGetTimeoutDuringBody(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", 1000))
		w.(http.Flusher).Flush()
		sleepUntilGone(r)
	})
	res := run(t, New(Config{AllowPrivate: true, Timeout: 100 * time.Millisecond}).HTTPGet(), map[string]any{"url": srv.URL})
	wantError(t, res, "timed out after 100ms")
}

func TestHTTPGetCancelledIsGoError(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { sleepUntilGone(r) })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := runErr(ctx, t, New(Config{AllowPrivate: true}).HTTPGet(), map[string]any{"url": srv.URL})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestHTTPGetOutputCap(t *testing.T) {
	big := strings.Repeat("abcdefghij", 5000) // 50000 bytes
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, big)
	})
	res := run(t, New(Config{AllowPrivate: true, MaxOutput: 1000}).HTTPGet(), map[string]any{"url": srv.URL})
	wantOK(t, res, "[output truncated at 1000 of 50000 bytes]")
	_, body, _ := strings.Cut(res.Output, "\n\n")
	if got := strings.Count(body, "abcdefghij"); got != 100 {
		t.Errorf("kept %d copies of the chunk, want 100", got)
	}
}

func TestCapOutputKeepsRunesWhole(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	got := capOutput(s, 5)
	if want := "éé\n\n[output truncated at 4 of 20 bytes]"; got != want {
		t.Errorf("capOutput = %q, want %q", got, want)
	}
	if capOutput("short", 10) != "short" {
		t.Error("capOutput changed a short string")
	}
}

func TestHTTPGetMaxBytes(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("y", 10000))
	})
	res := run(t, New(Config{AllowPrivate: true, MaxBytes: 600}).HTTPGet(), map[string]any{"url": srv.URL})
	wantOK(t, res, "[response body truncated: only the first 600 bytes were read]")
	if !strings.Contains(res.Output, strings.Repeat("y", 600)) || strings.Contains(res.Output, strings.Repeat("y", 601)) {
		t.Errorf("output does not hold exactly 600 bytes of body:\n%s", res.Output)
	}
}

// redirectChain serves /r/N redirecting to /r/N+1 until N reaches last.
func redirectChain(t *testing.T, last int) string {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if n < last {
			http.Redirect(w, r, fmt.Sprintf("/r/%d", n+1), http.StatusFound)
			return
		}
		fmt.Fprintf(w, "arrived at %d", n)
	})
	return srv.URL
}

func TestHTTPGetRedirectLimit(t *testing.T) {
	base := redirectChain(t, 5)
	res := run(t, New(Config{AllowPrivate: true}).HTTPGet(), map[string]any{"url": base + "/r/0"})
	wantOK(t, res, "arrived at 5", "URL: "+base+"/r/5", "Redirected from: "+base+"/r/0")

	res = run(t, New(Config{AllowPrivate: true, MaxRedirects: 3}).HTTPGet(), map[string]any{"url": base + "/r/0"})
	wantError(t, res, "too many redirects (the limit is 3)")

	res = run(t, New(Config{AllowPrivate: true, MaxRedirects: -1}).HTTPGet(), map[string]any{"url": base + "/r/4"})
	wantError(t, res, "too many redirects (the limit is 0)")
}

func TestHTTPGetRedirectToOtherScheme(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.com/file", http.StatusFound)
	})
	res := run(t, New(Config{AllowPrivate: true}).HTTPGet(), map[string]any{"url": srv.URL})
	wantError(t, res, `unsupported scheme "ftp"`)
}

func TestHTTPGetStatusError(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/html" {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<html><head><style>x{}</style></head><body><h1>Page not found</h1></body></html>`)
			return
		}
		http.Error(w, "no such page here", http.StatusNotFound)
	})
	tools := New(Config{AllowPrivate: true})
	wantError(t, run(t, tools.HTTPGet(), map[string]any{"url": srv.URL + "/text"}), "HTTP 404 Not Found: no such page here")
	res := run(t, tools.HTTPGet(), map[string]any{"url": srv.URL + "/html"})
	wantError(t, res, "HTTP 404 Not Found: Page not found")
	if strings.Contains(res.Output, "<h1>") {
		t.Errorf("HTML tags in the error: %s", res.Output)
	}
}

func TestReadWebpages(t *testing.T) {
	var inFlight, maxInFlight atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "body of %s", r.URL.Path)
	})
	urls := []string{
		srv.URL + "/p1", srv.URL + "/missing", "ftp://example.com/x", srv.URL + "/p4",
		srv.URL + "/p5", srv.URL + "/p6", srv.URL + "/p7", srv.URL + "/p8",
	}
	var (
		mu    sync.Mutex
		notes []string
	)
	ctx := tool.WithProgress(context.Background(), func(note string) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, note)
	})
	res, err := runErr(ctx, t, New(Config{AllowPrivate: true}).ReadWebpages(), map[string]any{"urls": urls})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, res, "Read 6 of 8 pages (2 failed).")

	// Results come back in input order, each with its own outcome.
	sections := strings.Split(res.Output, "\n\n---\n\n")
	if len(sections) != len(urls) {
		t.Fatalf("got %d sections, want %d:\n%s", len(sections), len(urls), res.Output)
	}
	for i, sec := range sections {
		if !strings.Contains(sec, fmt.Sprintf("## [%d] %s\n", i+1, urls[i])) {
			t.Errorf("section %d is not for %s:\n%s", i+1, urls[i], sec)
		}
		switch i {
		case 1:
			if !strings.Contains(sec, "Error:") || !strings.Contains(sec, "HTTP 404") {
				t.Errorf("section 2 lacks its 404 error:\n%s", sec)
			}
		case 2:
			if !strings.Contains(sec, "Error:") || !strings.Contains(sec, "only http and https") {
				t.Errorf("section 3 lacks its scheme error:\n%s", sec)
			}
		default:
			path := urls[i][len(srv.URL):]
			if !strings.Contains(sec, "body of "+path) {
				t.Errorf("section %d lacks its body:\n%s", i+1, sec)
			}
		}
	}

	if m := maxInFlight.Load(); m > fetchWorkers || m < 2 {
		t.Errorf("max concurrent fetches = %d, want 2..%d", m, fetchWorkers)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != len(urls) || notes[len(notes)-1] != "fetched 8 of 8 pages" || notes[0] != "fetched 1 of 8 pages" {
		t.Errorf("progress notes = %q", notes)
	}
}

func TestReadWebpagesBadArguments(t *testing.T) {
	tools := New(Config{AllowPrivate: true})
	many := make([]string, MaxPages+1)
	for i := range many {
		many[i] = "http://example.com/"
	}
	cases := []struct {
		args any
		want string
	}{
		{`{}`, "urls"},
		{map[string]any{"urls": []string{}}, "urls is empty"},
		{map[string]any{"urls": "http://example.com"}, "urls"},
		{map[string]any{"urls": many}, "urls"},
	}
	for _, c := range cases {
		wantError(t, run(t, tools.ReadWebpages(), c.args), c.want)
	}
}

func TestReadWebpagesAllFailedIsError(t *testing.T) {
	res := run(t, New(Config{AllowPrivate: true}).ReadWebpages(), map[string]any{"urls": []string{"ftp://a/b", "nope"}})
	wantError(t, res, "Read 0 of 2 pages (2 failed).", "ftp scheme", "has no scheme")
}

func TestReadWebpagesTimeoutPerPage(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			sleepUntilGone(r)
			return
		}
		fmt.Fprint(w, "quick page")
	})
	res := run(t, New(Config{AllowPrivate: true, Timeout: 80 * time.Millisecond}).ReadWebpages(),
		map[string]any{"urls": []string{srv.URL + "/slow", srv.URL + "/fast"}})
	wantOK(t, res, "Read 1 of 2 pages (1 failed).", "timed out after 80ms", "quick page")
}

func TestReadWebpagesCancelledIsGoError(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { sleepUntilGone(r) })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	urls := []string{srv.URL + "/1", srv.URL + "/2", srv.URL + "/3", srv.URL + "/4", srv.URL + "/5", srv.URL + "/6"}
	start := time.Now()
	_, err := runErr(ctx, t, New(Config{AllowPrivate: true}).ReadWebpages(), map[string]any{"urls": urls})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancellation took %s", d)
	}
}

func BenchmarkHTMLToMarkdown(b *testing.B) {
	// About 1 MB: the article repeated inside one page.
	article := articlePage[strings.Index(articlePage, "<main>"):strings.Index(articlePage, "</main>")]
	page := "<html><head><title>Big</title></head><body>" + strings.Repeat(article+"</main>", 700) + "</body></html>"
	u, _ := url.Parse("https://example.com/big")
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if _, _, _, err := htmlToMarkdown(context.Background(), []byte(page), "text/html", u); err != nil {
			b.Fatal(err)
		}
	}
}

package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/avaagent/ava/internal/lazyre"
	"github.com/go-shiori/go-readability"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// htmlToMarkdown extracts the main content of an HTML page with
// readability and converts it to Markdown, after removing the text the
// page hides from people (stripHidden), which it reports. When
// readability finds no article, the whole body is converted instead.
// ctype is the Content-Type header, used for the charset.
func htmlToMarkdown(ctx context.Context, body []byte, ctype string, pageURL *url.URL) (title, md string, hidden hiddenReport, err error) {
	doc, err := html.Parse(decodeReader(body, ctype))
	if err != nil {
		return "", "", hidden, fmt.Errorf("parse HTML: %w", err)
	}
	title = documentTitle(doc)
	hidden = stripHidden(doc)
	opts := []converter.ConvertOptionFunc{
		converter.WithContext(ctx),
		converter.WithDomain(pageURL.Scheme + "://" + pageURL.Host),
	}
	// FromDocument works on a clone, so doc is intact for the fallback.
	if art, rerr := readability.FromDocument(doc, pageURL); rerr == nil && art.Node != nil {
		if out, cerr := htmltomarkdown.ConvertNode(art.Node, opts...); cerr == nil && strings.TrimSpace(string(out)) != "" {
			if t := strings.TrimSpace(art.Title); t != "" {
				title = t
			}
			return title, tidyMarkdown(string(out)), hidden, nil
		}
	}
	root := findElement(doc, atom.Body)
	if root == nil {
		root = doc
	}
	out, err := htmltomarkdown.ConvertNode(root, opts...)
	if err != nil {
		return "", "", hidden, fmt.Errorf("convert HTML to Markdown: %w", err)
	}
	return title, tidyMarkdown(string(out)), hidden, nil
}

// documentTitle returns the text of the first <title>.
func documentTitle(doc *html.Node) string {
	n := findElement(doc, atom.Title)
	if n == nil {
		return ""
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return collapseSpace(b.String())
}

// findElement returns the first element with the given tag, depth first.
func findElement(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if found := findElement(c, a); found != nil {
			return found
		}
	}
	return nil
}

// htmlText returns the visible text of an HTML fragment, whitespace
// collapsed (for short excerpts such as error pages); hidden text is
// left out.
func htmlText(b []byte) string {
	doc, err := html.Parse(decodeReader(b, ""))
	if err != nil {
		return ""
	}
	stripHidden(doc)
	var sb strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.ElementNode && (n.DataAtom == atom.Head || n.DataAtom == atom.Script || n.DataAtom == atom.Style):
			return
		case n.Type == html.TextNode:
			sb.WriteString(n.Data)
			sb.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return collapseSpace(sb.String())
}

var blankLines = lazyre.New(`\n{3,}`)

// tidyMarkdown trims and squeezes runs of blank lines.
func tidyMarkdown(s string) string {
	return strings.TrimSpace(blankLines().ReplaceAllString(s, "\n\n"))
}

// decodeReader returns body decoded to UTF-8 from the charset the header
// or the content declares (UTF-8 when neither does).
func decodeReader(body []byte, ctype string) io.Reader {
	r, err := charset.NewReader(bytes.NewReader(body), ctype)
	if err != nil {
		return bytes.NewReader(body)
	}
	return r
}

// decodeText returns body as valid UTF-8 text.
func decodeText(body []byte, ctype string) string {
	b, err := io.ReadAll(decodeReader(body, ctype))
	if err != nil {
		b = body
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// collapseSpace joins all whitespace runs into single spaces.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// excerpt returns at most n bytes of s, cut on a rune boundary, with "…"
// when something was cut.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeBoundary(s, n)] + "…"
}

// capOutput cuts s to at most max bytes and says where it cut.
func capOutput(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := runeBoundary(s, max)
	return s[:cut] + fmt.Sprintf("\n\n[output truncated at %d of %d bytes]", cut, len(s))
}

// runeBoundary returns the largest i <= n that starts a rune in s.
func runeBoundary(s string, n int) int {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

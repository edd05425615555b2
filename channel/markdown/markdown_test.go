package markdown_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/channel/markdown"
)

// TestParse: the text a person reads and its spans, for each construct,
// and what untrusted Markdown cannot do: raw HTML stays text, only
// http(s) links are links, an image is never more than a link.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      markdown.Text
	}{
		{"emphasis", "a *i* **b** ~~s~~ `c`", markdown.Text{Plain: "a i b s c", Spans: []markdown.Span{
			{Start: 2, End: 3, Style: markdown.Italic}, {Start: 4, End: 5, Style: markdown.Bold},
			{Start: 6, End: 7, Style: markdown.Strike}, {Start: 8, End: 9, Style: markdown.Code}}}},
		{"escapes and references", `\*not\* &amp; &#169; \` + "`x`", markdown.Text{Plain: "*not* & © `x`"}},
		{"fence", "```py\nprint(1)\n```", markdown.Text{Plain: "print(1)", Spans: []markdown.Span{{Start: 0, End: 8, Style: markdown.Pre, Lang: "py"}}}},
		{"safe link", "[go](https://go.dev)", markdown.Text{Plain: "go", Spans: []markdown.Span{{Start: 0, End: 2, Style: markdown.Link, URL: "https://go.dev"}}}},
		{"unsafe links", "[a](javascript:x) [b](data:text/html,x) [c](/rel) <mailto:x@y>", markdown.Text{Plain: "a b c mailto:x@y"}},
		{"www link", "see www.go.dev", markdown.Text{Plain: "see www.go.dev", Spans: []markdown.Span{{Start: 4, End: 14, Style: markdown.Link, URL: "http://www.go.dev"}}}},
		{"raw html", "<script>alert(1)</script>\n\n<b onclick=x>hi</b>", markdown.Text{Plain: "<script>alert(1)</script>\n\n<b onclick=x>hi</b>"}},
		{"image", "![cat](https://c.example/cat.png)", markdown.Text{Plain: "image: cat", Spans: []markdown.Span{{Start: 0, End: 10, Style: markdown.Link, URL: "https://c.example/cat.png"}}}},
		{"image in a link", "[![cat](https://c.example/c.png)](https://l.example)", markdown.Text{Plain: "cat", Spans: []markdown.Span{{Start: 0, End: 3, Style: markdown.Link, URL: "https://l.example"}}}},
		{"unsafe image", "![x](javascript:alert(1))", markdown.Text{Plain: "image: x"}},
		{"lists", "1. one\n2. two\n   - a\n\n   - b", markdown.Text{Plain: "1. one\n2. two\n   • a\n\n   • b"}},
		{"heading and quote", "## H\n\n> q", markdown.Text{Plain: "H\n\n> q", Spans: []markdown.Span{{Start: 0, End: 1, Style: markdown.Bold}}}},
		{"table", "| a | b |\n|:-:|--:|\n| xyz | 1 |", markdown.Text{Plain: " a  │ b\n────┼──\nxyz │ 1", Spans: []markdown.Span{{Start: 0, End: len(" a  │ b\n────┼──\nxyz │ 1"), Style: markdown.Pre}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, markdown.Parse(c.src)); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", c.src, diff)
			}
		})
	}
}

// Package markdown turns a model's Markdown answer into styled text for
// the channels that show no HTML: a terminal (ANSI, see Text.ANSI) and
// Telegram (message entities). It parses with goldmark (CommonMark and
// GitHub's tables, strikethrough and bare links) and writes the plain
// text a person reads, with spans that say which of its bytes are bold,
// italic, struck, code, a code block (with its language) or a link.
//
// The model's text is untrusted: raw HTML stays the text it is (nothing
// interprets it here), a link is kept only to an http: or https:
// address (javascript:, data: and the like stay text), and an image is
// never fetched: it becomes its alt text, linked to the image when the
// address is safe. Lists, headings, quotes and tables become text laid
// out for a monospace-free reader: bullets and numbers, a bold heading,
// "> " quotes, and a table as an aligned code block.
package markdown

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gparser "github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Style is how a span of text is shown.
type Style int

// The styles a span can have.
const (
	Bold Style = iota + 1
	Italic
	Strike
	Code // inline code
	Pre  // a code block; Span.Lang may name its language
	Link // Span.URL is an http(s) address
)

// Span styles Text.Plain[Start:End] (byte offsets). Spans may nest.
type Span struct {
	Start, End int
	Style      Style
	Lang       string // Pre: the code block's language, if given
	URL        string // Link: where it goes
}

// Text is Markdown rendered for reading: plain text and its styles.
type Text struct {
	Plain string
	Spans []Span
}

// parser is goldmark with GitHub's extensions, built on first use (not
// at start-up, which every ava command pays); it is safe for concurrent
// use.
var parser = sync.OnceValue(func() gparser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify)).Parser()
})

// Parse renders Markdown src as styled text.
func Parse(src string) Text {
	source := []byte(src)
	doc := parser().Parse(text.NewReader(source))
	w := &writer{source: source}
	w.blocks(doc, "")
	return Text{Plain: strings.TrimRight(w.buf.String(), "\n "), Spans: w.clip()}
}

// safeURL reports whether a link may be kept: only http(s) addresses.
func safeURL(u string) bool {
	l := strings.ToLower(strings.TrimSpace(u))
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// writer builds a Text from goldmark's tree.
type writer struct {
	source []byte
	buf    bytes.Buffer
	spans  []Span
}

// clip drops empty spans and ends those past the trimmed text.
func (w *writer) clip() []Span {
	n := len(bytes.TrimRight(w.buf.Bytes(), "\n "))
	var out []Span
	for _, s := range w.spans {
		s.End = min(s.End, n)
		if s.End > s.Start {
			out = append(out, s)
		}
	}
	return out
}

// styled writes what fn writes as a span of style.
func (w *writer) styled(sp Span, fn func()) {
	sp.Start = w.buf.Len()
	fn()
	sp.End = w.buf.Len()
	w.spans = append(w.spans, sp)
}

// gap ends the current block: a blank line before the next one.
func (w *writer) gap() {
	s := w.buf.Bytes()
	switch {
	case len(s) == 0:
	case bytes.HasSuffix(s, []byte("\n\n")):
	case bytes.HasSuffix(s, []byte("\n")):
		w.buf.WriteString("\n")
	default:
		w.buf.WriteString("\n\n")
	}
}

// newline ends the current line, if one is open.
func (w *writer) newline() {
	if s := w.buf.Bytes(); len(s) > 0 && !bytes.HasSuffix(s, []byte("\n")) {
		w.buf.WriteString("\n")
	}
}

// blocks writes n's block children; prefix starts each of their lines
// after the first (a list item's indent, a quote's "> ").
func (w *writer) blocks(n ast.Node, prefix string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.block(c, prefix)
	}
}

// block writes one block.
func (w *writer) block(n ast.Node, prefix string) {
	switch n := n.(type) {
	case *ast.Paragraph:
		w.gap()
		w.inlines(n, prefix)
	case *ast.TextBlock: // a tight list item's text
		w.inlines(n, prefix)
	case *ast.Heading:
		w.gap()
		w.styled(Span{Style: Bold}, func() { w.inlines(n, prefix) })
	case *ast.ThematicBreak:
		w.gap()
		w.buf.WriteString("———")
	case *ast.FencedCodeBlock:
		w.gap()
		w.code(n, string(n.Language(w.source)), prefix)
	case *ast.CodeBlock:
		w.gap()
		w.code(n, "", prefix)
	case *ast.HTMLBlock: // shown as the text it is
		w.gap()
		var closing *text.Segment
		if n.HasClosure() {
			closing = &n.ClosureLine
		}
		w.lines(n.Lines(), closing, prefix)
	case *ast.Blockquote:
		w.gap()
		w.buf.WriteString("> ")
		w.quote(n, prefix+"> ")
	case *ast.List:
		w.gap()
		w.list(n, prefix)
	case *east.Table:
		w.gap()
		w.table(n)
	default:
		w.blocks(n, prefix)
	}
}

// quote writes a block quote's blocks, each line after "> ".
func (w *writer) quote(n ast.Node, prefix string) {
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !first {
			w.buf.WriteString("\n" + prefix)
		}
		first = false
		if p, ok := c.(*ast.Paragraph); ok {
			w.inlines(p, prefix)
			continue
		}
		w.block(c, prefix)
	}
}

// list writes a list's items, each after its bullet or number, their
// later lines indented to the item's text.
func (w *writer) list(n *ast.List, prefix string) {
	num := n.Start
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		w.newline()
		if w.buf.Len() > 0 && !bytes.HasSuffix(w.buf.Bytes(), []byte("\n\n")) && !n.IsTight && item != n.FirstChild() {
			w.buf.WriteString("\n")
		}
		if bytes.HasSuffix(w.buf.Bytes(), []byte("\n")) {
			w.buf.WriteString(prefix)
		}
		mark := "• "
		if n.IsOrdered() {
			mark = strconv.Itoa(num) + ". "
			num++
		}
		w.buf.WriteString(mark)
		inner := prefix + strings.Repeat(" ", utf8.RuneCountInString(mark))
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if c != item.FirstChild() {
				w.newline()
				w.buf.WriteString(inner)
			}
			switch c := c.(type) {
			case *ast.Paragraph, *ast.TextBlock:
				w.inlines(c, inner)
			case *ast.List:
				w.buf.Truncate(len(bytes.TrimRight(w.buf.Bytes(), " ")))
				w.list(c, inner)
			default:
				w.block(c, inner)
			}
		}
	}
}

// code writes a code block as a Pre span.
func (w *writer) code(n ast.Node, lang, prefix string) {
	w.styled(Span{Style: Pre, Lang: lang}, func() {
		w.lines(n.Lines(), nil, prefix)
		w.buf.Truncate(len(bytes.TrimRight(w.buf.Bytes(), "\n")))
	})
}

// lines writes a block's raw lines (and its closing line, if any).
func (w *writer) lines(segs *text.Segments, closing *text.Segment, prefix string) {
	for i := range segs.Len() {
		if i > 0 {
			w.buf.WriteString(prefix)
		}
		seg := segs.At(i)
		w.buf.Write(seg.Value(w.source))
	}
	if closing != nil {
		w.buf.WriteString(prefix)
		w.buf.Write(closing.Value(w.source))
	}
}

// inlines writes n's inline children; prefix starts each new line.
func (w *writer) inlines(n ast.Node, prefix string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.inline(c, prefix)
	}
}

// inline writes one inline node.
func (w *writer) inline(n ast.Node, prefix string) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(w.source)
		if !n.IsRaw() {
			v = unescape(v)
		}
		w.buf.Write(v)
		if n.SoftLineBreak() || n.HardLineBreak() {
			w.buf.WriteString("\n" + prefix)
		}
	case *ast.String:
		v := n.Value
		if !n.IsRaw() {
			v = unescape(v)
		}
		w.buf.Write(v)
	case *ast.CodeSpan:
		w.styled(Span{Style: Code}, func() { w.buf.WriteString(codeSpan(n, w.source)) })
	case *ast.Emphasis:
		st := Italic
		if n.Level >= 2 {
			st = Bold
		}
		w.styled(Span{Style: st}, func() { w.inlines(n, prefix) })
	case *east.Strikethrough:
		w.styled(Span{Style: Strike}, func() { w.inlines(n, prefix) })
	case *ast.Link:
		w.link(string(n.Destination), func() { w.inlines(n, prefix) })
	case *ast.AutoLink:
		url := string(n.URL(w.source))
		if n.AutoLinkType == ast.AutoLinkURL && strings.HasPrefix(strings.ToLower(url), "www.") {
			url = "http://" + url // linkify's www.example.com
		}
		w.link(url, func() { w.buf.Write(n.Label(w.source)) })
	case *ast.Image:
		w.image(n, prefix)
	case *ast.RawHTML: // shown as the text it is
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			w.buf.Write(seg.Value(w.source))
		}
	default:
		w.inlines(n, prefix)
	}
}

// link writes a link's text, as a Link span when its address is safe.
func (w *writer) link(url string, label func()) {
	if !safeURL(url) {
		label()
		return
	}
	w.styled(Span{Style: Link, URL: url}, label)
}

// image writes an image's alt text, linked to the image when its address
// is safe and it is not inside a link already.
func (w *writer) image(n *ast.Image, prefix string) {
	alt := func() {
		if n.FirstChild() == nil {
			w.buf.WriteString("image")
			return
		}
		w.inlines(n, prefix)
	}
	for p := n.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*ast.Link); ok {
			alt()
			return
		}
	}
	w.link(string(n.Destination), func() {
		w.buf.WriteString("image: ")
		alt()
	})
}

// codeSpan is an inline code span's text.
func codeSpan(n *ast.CodeSpan, source []byte) string {
	var b bytes.Buffer
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(source))
		case *ast.String:
			b.Write(c.Value)
		}
	}
	return b.String()
}

// unescape resolves backslash escapes and character references, as an
// HTML renderer would before escaping for HTML.
func unescape(v []byte) []byte {
	return util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
}

// table writes a table as a code block of aligned columns (cells as
// their plain text), which reads as a table in a monospace font.
func (w *writer) table(t *east.Table) {
	var rows [][]string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cw := &writer{source: w.source}
			cw.inlines(c, "")
			row = append(row, strings.Join(strings.Fields(cw.buf.String()), " "))
		}
		rows = append(rows, row)
	}
	widths := columnWidths(rows)
	w.styled(Span{Style: Pre}, func() {
		for i, row := range rows {
			if i > 0 {
				w.buf.WriteString("\n")
			}
			w.buf.WriteString(tableLine(row, widths, t.Alignments))
			if i == 0 {
				w.buf.WriteString("\n" + ruleLine(widths))
			}
		}
	})
}

// columnWidths is each column's width in characters.
func columnWidths(rows [][]string) []int {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	return widths
}

// tableLine is one row, its cells padded to their column's width and
// aligned as the table says.
func tableLine(row []string, widths []int, align []east.Alignment) string {
	cells := make([]string, len(widths))
	for i, wd := range widths {
		cell := ""
		if i < len(row) {
			cell = row[i]
		}
		pad := wd - utf8.RuneCountInString(cell)
		a := east.AlignNone
		if i < len(align) {
			a = align[i]
		}
		switch a {
		case east.AlignRight:
			cell = strings.Repeat(" ", pad) + cell
		case east.AlignCenter:
			cell = strings.Repeat(" ", pad/2) + cell + strings.Repeat(" ", pad-pad/2)
		default:
			cell += strings.Repeat(" ", pad)
		}
		cells[i] = cell
	}
	return strings.TrimRight(strings.Join(cells, " │ "), " ")
}

// ruleLine is the line under a table's header.
func ruleLine(widths []int) string {
	parts := make([]string, len(widths))
	for i, wd := range widths {
		parts[i] = strings.Repeat("─", wd)
	}
	return strings.Join(parts, "─┼─")
}

package terminal

import (
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/avaagent/ava/channel/markdown"
)

// Styled reports whether answers written to w are shown styled: w is a
// terminal, NO_COLOR is not set (https://no-color.org) and TERM is not
// "dumb". Anything else (a pipe, a file, a test's buffer) gets the
// answer's Markdown as it was written.
func Styled(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false
	}
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// sgr is the ANSI Select Graphic Rendition parameter of each style:
// bold, italic, struck, inline code and code blocks in cyan, links
// underlined.
var sgr = map[markdown.Style]string{
	markdown.Bold:   "1",
	markdown.Italic: "3",
	markdown.Strike: "9",
	markdown.Code:   "36",
	markdown.Pre:    "36",
	markdown.Link:   "4",
}

// Markdown renders a model's Markdown answer for a terminal with ANSI
// styles (see package markdown for what becomes of lists, tables, raw
// HTML and links). The model's own control characters are dropped
// (Printable), so only the styles written here reach the terminal. A
// link whose text is not its address is followed by the address.
func Markdown(src string) string {
	t := markdown.Parse(src)
	cuts := []int{0, len(t.Plain)}
	for _, s := range t.Spans {
		cuts = append(cuts, s.Start, s.End)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var b strings.Builder
	styled := false
	for i, at := range cuts[:len(cuts)-1] {
		if i > 0 {
			styled = endLinks(&b, t, at, styled)
		}
		codes := activeCodes(t.Spans, at)
		if styled || codes != "" {
			b.WriteString("\x1b[0")
			if codes != "" {
				b.WriteString(";" + codes)
			}
			b.WriteString("m")
			styled = codes != ""
		}
		b.WriteString(Printable(t.Plain[at:cuts[i+1]]))
	}
	styled = endLinks(&b, t, len(t.Plain), styled)
	if styled {
		b.WriteString("\x1b[0m")
	}
	return b.String()
}

// activeCodes is the SGR parameters of the spans covering byte at.
func activeCodes(spans []markdown.Span, at int) string {
	var codes []string
	for _, s := range spans {
		if s.Start <= at && at < s.End && !slices.Contains(codes, sgr[s.Style]) {
			codes = append(codes, sgr[s.Style])
		}
	}
	return strings.Join(codes, ";")
}

// endLinks writes " (address)" after each link ending at byte at whose
// text is not its address, unstyled; it reports whether styles are on.
func endLinks(b *strings.Builder, t markdown.Text, at int, styled bool) bool {
	for _, s := range t.Spans {
		if s.Style != markdown.Link || s.End != at || strings.TrimPrefix(s.URL, "http://") == t.Plain[s.Start:s.End] || s.URL == t.Plain[s.Start:s.End] {
			continue
		}
		if styled {
			b.WriteString("\x1b[0m")
			styled = false
		}
		b.WriteString(" (" + Printable(s.URL) + ")")
	}
	return styled
}

// blockEnd is where the complete blocks of a streaming answer end: just
// after its last blank line outside a code fence (0 when there is none),
// so that what comes before can be rendered while the rest streams.
func blockEnd(text string) int {
	end, fenced, at := 0, false, 0
	for at < len(text) {
		nl := strings.IndexByte(text[at:], '\n')
		if nl < 0 {
			break // an unfinished line
		}
		line := text[at : at+nl]
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
		}
		at += nl + 1
		if trimmed == "" && !fenced && at > 1 {
			end = at
		}
	}
	return end
}

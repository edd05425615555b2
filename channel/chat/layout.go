package chat

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The chat's layout rule: every line handed to Bubble Tea fits the
// screen's width. Printed lines are wrapped at word boundaries (a word
// longer than the width is cut, nothing else), so the terminal never
// wraps one by itself in the middle of a word; the footer's lines are
// wrapped or clipped the same way, so the renderer's count of the rows
// it drew is the terminal's, and its next paint starts below what was
// printed instead of over it (issue 42 item 8).

// wrapText wraps each line of text to width columns, continuing a line
// under its own indentation (its leading spaces, or the text after a
// "you› " or "ava› " label). A width below 20 (unknown, or a tiny
// window) leaves text as it is.
func wrapText(text string, width int) string {
	if width < 20 {
		return text
	}
	lines := strings.Split(strings.ReplaceAll(text, "\t", "    "), "\n")
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		out = append(out, wrapLine(line, width))
	}
	return strings.Join(out, "\n")
}

// wrapLine wraps one line with a hanging indent.
func wrapLine(line string, width int) string {
	if ansi.StringWidth(line) <= width {
		return line
	}
	head, body := splitHang(line)
	hang := ansi.StringWidth(head)
	if hang > width/2 {
		head, body, hang = "", line, 0
	}
	wrapped := strings.Split(ansi.Wrap(body, width-hang, ""), "\n")
	pad := strings.Repeat(" ", hang)
	for i := range wrapped {
		wrapped[i] = strings.TrimRight(wrapped[i], " ")
		if i == 0 {
			wrapped[i] = head + wrapped[i]
		} else {
			wrapped[i] = pad + strings.TrimLeft(wrapped[i], " ")
		}
	}
	return strings.Join(wrapped, "\n")
}

// splitHang splits a line into what its continuation lines are indented
// under (leading spaces, a "you› " label, a status line's icon) and the
// rest.
func splitHang(line string) (string, string) {
	body := strings.TrimLeft(line, " ")
	head := line[:len(line)-len(body)]
	if label, rest, ok := strings.Cut(body, "› "); ok && !strings.Contains(label, " ") && ansi.StringWidth(label) <= 8 {
		return head + label + "› ", rest
	}
	return head, body
}

// fit clips a footer line to the width, by display width.
func fit(s string, width int) string {
	if width > 1 && ansi.StringWidth(s) > width {
		return ansi.Truncate(s, width-1, "") + "…"
	}
	return s
}

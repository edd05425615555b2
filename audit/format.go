package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
)

// DefaultMaxContent is how many characters of text FormatLine shows.
const DefaultMaxContent = 200

// FormatOptions tunes [FormatLine].
type FormatOptions struct {
	// Color adds ANSI colours; set it only when writing to a terminal.
	Color bool
	// ShowAgent adds an agent column ("ava" or "S-7f3a2b"), for output
	// that mixes agents.
	ShowAgent bool
	// ShowDate shows the date as well as the time of day.
	ShowDate bool
	// Location is the time zone of the times shown (default UTC).
	Location *time.Location
	// MaxContent is how many characters of text to show before
	// shortening it with "… [+N chars]" (default DefaultMaxContent).
	MaxContent int
}

// ANSI colours.
const (
	ansiReset   = "\x1b[0m"
	ansiDim     = "\x1b[2m"
	ansiBold    = "\x1b[1m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiBlue    = "\x1b[34m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
)

var typeColors = map[event.Type]string{
	event.UserMessage: ansiBold, event.AssistantMessage: ansiBlue, event.ToolCall: ansiCyan,
	event.ToolResult: ansiGreen, event.SubagentSpawn: ansiMagenta, event.SubagentComplete: ansiMagenta,
	event.ExtendedThinking: ansiDim, event.CostUpdate: ansiYellow, event.Error: ansiRed,
	event.SessionStart: ansiBold, event.SessionEnd: ansiBold,
}

// FormatLine renders one entry as one human-readable line (no newline),
// in the style of `[14:05:30] ToolCall web_search {"query": "…"}`.
func FormatLine(ev event.Event, opts FormatOptions) string {
	f := formatter{opts: opts}
	if f.opts.MaxContent <= 0 {
		f.opts.MaxContent = DefaultMaxContent
	}
	if f.opts.Location == nil {
		f.opts.Location = time.UTC
	}
	layout := "15:04:05"
	if opts.ShowDate {
		layout = "2006-01-02 15:04:05"
	}
	var b strings.Builder
	b.WriteString(f.paint(ansiDim, "["+ev.Time.In(f.opts.Location).Format(layout)+"]"))
	b.WriteByte(' ')
	if opts.ShowAgent {
		b.WriteString(f.paint(ansiDim, fmt.Sprintf("%-8s", ev.Agent)))
		b.WriteByte(' ')
	}
	name, body, failed := f.describe(ev)
	color := typeColors[ev.Type]
	if failed {
		color = ansiRed
	}
	b.WriteString(f.paint(color, name))
	if body != "" {
		b.WriteByte(' ')
		b.WriteString(body)
	}
	return b.String()
}

type formatter struct{ opts FormatOptions }

func (f formatter) paint(color, s string) string {
	if !f.opts.Color || color == "" {
		return s
	}
	return color + s + ansiReset
}

// describe returns the label, the rest of the line, and whether the entry
// reports a failure.
func (f formatter) describe(ev event.Event) (string, string, bool) {
	name := string(ev.Type)
	switch ev.Type {
	case event.UserMessage:
		var c event.TextContent
		if ev.Decode(&c) == nil {
			if ev.User != "" {
				name += " (" + ev.User + ")"
			}
			return name, f.text(c.Text), false
		}
	case event.AssistantMessage:
		var c event.TextContent
		if ev.Decode(&c) == nil {
			return name, f.text(c.Text), false
		}
	case event.ExtendedThinking:
		var c event.ThinkingContent
		if ev.Decode(&c) == nil {
			return "Thinking:", `"` + f.text(c.Thinking) + `"`, false
		}
	case event.ToolCall:
		var c event.ToolCallContent
		if ev.Decode(&c) == nil {
			return name, c.Name + " " + f.shorten(spacedJSON(c.Args)), false
		}
	case event.ToolResult:
		return f.toolResult(ev)
	case event.SubagentSpawn:
		var c event.SubagentSpawnContent
		if ev.Decode(&c) == nil {
			return name, fmt.Sprintf("%s role=%s model=%s mode=%s %q", c.SubagentID, c.Role, c.Model, c.Mode, f.text(c.Task)), false
		}
	case event.SubagentComplete:
		var c event.SubagentCompleteContent
		if ev.Decode(&c) == nil {
			body := fmt.Sprintf("%s status=%s cost=%s tokens=%d duration=%s", c.SubagentID, c.Status,
				money.Spend(c.CostCents, c.Tokens, false), c.Tokens, (time.Duration(c.DurationMs) * time.Millisecond).Round(time.Second))
			if c.Summary != "" {
				body += " " + f.text(c.Summary)
			}
			return name, body, c.Status != "" && c.Status != lifecycle.Success
		}
	case event.CostUpdate:
		var c event.CostContent
		if ev.Decode(&c) == nil {
			return name, fmt.Sprintf("tokens=%d cost=%s (run: tokens=%d cost=%s)", c.InputTokens+c.OutputTokens,
				money.Spend(c.CostCents, c.InputTokens+c.OutputTokens, c.Unpriced), c.TotalTokens, money.Spend(c.TotalCostCents, c.TotalTokens, c.Unpriced)), false
		}
	case event.Error:
		var c event.ErrorContent
		if ev.Decode(&c) == nil {
			body := f.text(c.Error)
			if c.Fatal {
				body += " (fatal)"
			}
			return name + ":", body, true
		}
	case event.SessionStart, event.SessionEnd:
		return f.session(ev)
	case event.FindingPosted:
		var c event.FindingContent
		if ev.Decode(&c) == nil {
			return name, fmt.Sprintf("#%d %s role=%s %s", c.FindingID, c.SubagentID, c.Role, f.text(c.Text)), false
		}
	}
	return name, f.shorten(spacedJSON(ev.Content)), false
}

func (f formatter) toolResult(ev event.Event) (string, string, bool) {
	var c event.ToolResultContent
	if ev.Decode(&c) != nil {
		return string(ev.Type), f.shorten(spacedJSON(ev.Content)), false
	}
	n := utf8.RuneCountInString(c.Output)
	if c.Success {
		return string(ev.Type), fmt.Sprintf("%s (success, %d chars)", c.Name, n), false
	}
	return string(ev.Type), fmt.Sprintf("%s (failed, %d chars) %s", c.Name, n, f.text(c.Output)), true
}

func (f formatter) session(ev event.Event) (string, string, bool) {
	var c event.SessionContent
	_ = ev.Decode(&c) // a malformed content just shows less
	parts := []string{"session=" + ev.Session}
	if c.Model != "" {
		parts = append(parts, "model="+c.Model)
	}
	if c.Offline {
		parts = append(parts, "(offline scripted model)")
	}
	if c.Status != "" {
		parts = append(parts, "status="+string(c.Status))
	}
	failed := ev.Type == event.SessionEnd && c.Status != "" && c.Status != lifecycle.Success
	return string(ev.Type), strings.Join(parts, " "), failed
}

// text puts s on one line and shortens it.
func (f formatter) text(s string) string {
	s = strings.NewReplacer("\r\n", " ⏎ ", "\n", " ⏎ ", "\r", " ", "\t", " ").Replace(strings.TrimSpace(s))
	return f.shorten(s)
}

func (f formatter) shorten(s string) string { return Shorten(s, f.opts.MaxContent) }

// Shorten cuts s to max characters, marking what it left out:
// "first part… [+1234 chars]".
func Shorten(s string, max int) string {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	i := 0
	for range max {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return fmt.Sprintf("%s… [+%d chars]", s[:i], n-max)
}

// spacedJSON renders a JSON value on one line with a space after ':' and
// ',' between members ({"query": "x", "n": 2}); invalid JSON is shown as
// is.
func spacedJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if len(raw) == 0 || json.Indent(&buf, raw, "", "\x00") != nil {
		return string(raw)
	}
	var out strings.Builder
	comma := false
	for line := range strings.SplitSeq(buf.String(), "\n") {
		line = strings.TrimLeft(line, "\x00")
		if comma {
			out.WriteByte(' ')
		}
		out.WriteString(line)
		comma = strings.HasSuffix(line, ",")
	}
	return out.String()
}

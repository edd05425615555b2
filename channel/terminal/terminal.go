// Package terminal renders a session's events for a terminal: the
// answer as it streams, tool and subagent activity as status lines.
package terminal

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/subagent"
)

// PrintTurn streams the session's answer to stdout (unless quiet) and its
// tool and subagent activity to stderr, until ctx is done or the
// session's stream closes.
func PrintTurn(ctx context.Context, sub *event.Subscription, stdout, stderr io.Writer, quiet bool) {
	wroteText, endsWithNewline := false, true
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			if wroteText && !endsWithNewline && !quiet {
				io.WriteString(stdout, "\n")
			}
			return
		}
		for _, ev := range evs {
			if quiet {
				continue
			}
			switch ev.Type {
			case event.TextDelta:
				var c event.TextContent
				if ev.Decode(&c) == nil && c.Text != "" {
					io.WriteString(stdout, Printable(c.Text))
					wroteText, endsWithNewline = true, strings.HasSuffix(c.Text, "\n")
				}
			case event.Retry:
				var c event.RetryContent
				_ = ev.Decode(&c)
				fmt.Fprintf(stderr, "\n[retrying model call, attempt %d: %s]\n", c.Attempt, c.Error)
			case event.ToolCall:
				var c event.ToolCallContent
				_ = ev.Decode(&c)
				fmt.Fprintf(stderr, "[tool] %s %s\n", c.Name, shorten(string(c.Args), 120))
			case event.SubagentSpawn, event.SubagentComplete, event.SubagentProgress:
				if line := SubagentEventLine(ev); line != "" {
					fmt.Fprintln(stderr, line)
				}
			case event.SpawnProposed:
				var c event.SpawnProposedContent
				_ = ev.Decode(&c)
				fmt.Fprintf(stderr, "[proposal %s awaits your confirmation]\n%s\n", c.PendingID, c.Text)
			case event.AssistantMessage:
				var c event.TextContent
				if !wroteText && ev.Decode(&c) == nil && c.Text != "" {
					// An answer to a proposal is not streamed.
					io.WriteString(stdout, c.Text)
					wroteText, endsWithNewline = true, strings.HasSuffix(c.Text, "\n")
				}
				if wroteText && !endsWithNewline {
					io.WriteString(stdout, "\n")
					endsWithNewline = true
				}
			}
		}
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// SubagentLine is a subagent's one-line status for the person.
func SubagentLine(h *subagent.Handle) string { return StatusLine(h.Status()) }

// FollowSubagent prints a subagent's tool calls, stalls and retries to w
// as status lines, until ctx is done or its stream closes.
func FollowSubagent(ctx context.Context, sub *event.Subscription, role string, w io.Writer) {
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			return
		}
		for _, ev := range evs {
			if ev.Type != event.ToolCall && ev.Type != event.Stalled && ev.Type != event.Retry {
				continue
			}
			if line := EventLine(role, ev); line != "" {
				fmt.Fprintln(w, line)
			} else if ev.Type == event.Retry {
				fmt.Fprintln(w, "[retrying a model call]")
			}
		}
	}
}

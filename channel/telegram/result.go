package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/lifecycle"
)

// result sends the whole result of one of the chat's finished
// subagents (what its completion line summarises), its Markdown rendered
// as answers are and split into Telegram-sized messages.
func (c *Channel) result(ctx context.Context, ch *chat, key, id string) error {
	id = strings.TrimSpace(id)
	if id == "" {
		return c.send(ctx, ch, "Which subagent? /result S-xxxxxx (see /status).")
	}
	sa, ok := c.ownSubagent(ctx, key, id)
	switch {
	case !ok:
		return c.send(ctx, ch, notHere(id))
	case sa.Result == nil:
		return c.send(ctx, ch, sa.ID+" has no result yet ("+string(sa.Status)+"); /status "+sa.ID+" shows how it is doing.")
	}
	_, err := c.sendParts(ctx, ch, answerParts(resultMarkdown(sa.ID, sa.Role, *sa.Result)), nil)
	return err
}

// resultMarkdown is a result as Markdown: a heading line with the
// figures, the summary, the output (text as written, JSON in a code
// block), what a run that did not finish had found, its error and its
// sources.
func resultMarkdown(id, role string, r ava.Result) string {
	var b strings.Builder
	took := terminal.Elapsed(time.Duration(r.DurationSeconds * float64(time.Second)))
	fmt.Fprintf(&b, "**%s** (%s): %s · %s · %d tokens · $%.2f\n\n", id, role, r.Status, took, r.TokensUsed, r.CostCents/100)
	var text string
	if r.OutputFormat == "text" && json.Unmarshal(r.Output, &text) == nil && strings.TrimSpace(text) != "" {
		// A text answer's summary is its first line: the text says it.
		fmt.Fprintf(&b, "%s\n\n", terminal.Printable(text))
	} else if r.Summary != "" {
		fmt.Fprintf(&b, "%s\n\n", terminal.Printable(r.Summary))
	}
	var v any
	if r.OutputFormat == "json" && json.Unmarshal(r.Output, &v) == nil {
		out, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(&b, "```json\n%s\n```\n\n", terminal.Printable(string(out)))
	}
	if r.Partial != nil && r.Status != lifecycle.Success && strings.TrimSpace(r.Partial.Text) != "" {
		fmt.Fprintf(&b, "What it had found:\n%s\n\n", terminal.Printable(r.Partial.Text))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "Error: %s\n\n", terminal.Printable(r.Error))
	}
	for i, cit := range r.Citations {
		if i == 0 {
			b.WriteString("Sources:\n")
		}
		fmt.Fprintf(&b, "%d. [%s](%s)\n", i+1, strings.Join(strings.Fields(terminal.Printable(cit.Title)), " "), cit.URL)
	}
	return strings.TrimSpace(b.String())
}

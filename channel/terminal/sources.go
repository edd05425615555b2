package terminal

import (
	"fmt"
	"strings"

	"github.com/avaagent/ava/event"
)

// maxSources bounds the sources a completion notice lists.
const maxSources = 10

// SourcesText lists the sources a completed subagent's answer cites
// (the provider's web search citations), one numbered line each with its
// title and URL, or "" when it cites none or ev is not a completion.
func SourcesText(ev event.Event) string {
	if ev.Type != event.SubagentComplete {
		return ""
	}
	var c event.SubagentCompleteContent
	if ev.Decode(&c) != nil || len(c.Citations) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("📎 Sources:")
	for i, s := range c.Citations {
		if i == maxSources {
			fmt.Fprintf(&b, "\n… and %d more", len(c.Citations)-i)
			break
		}
		title := strings.Join(strings.Fields(Printable(s.Title)), " ")
		if title == "" {
			title = "(no title)"
		}
		fmt.Fprintf(&b, "\n%d. %s — %s", i+1, title, Printable(s.URL))
	}
	return b.String()
}

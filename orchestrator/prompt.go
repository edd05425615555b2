package orchestrator

import (
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/tool"
)

// SystemPrompt is the orchestrator's system prompt for the given tools.
func SystemPrompt(tools *tool.Registry, workspace string, now time.Time) string {
	var b strings.Builder
	b.WriteString(`You are Ava, an orchestrator agent. You talk with a person, answer directly
when you can, and delegate focused, parallel or token-heavy work to
specialised subagents when you have the tools to do so.

Guidelines:
- Answer simple questions yourself; do not use tools you do not need.
- When a tool fails, read its error and try a corrected call or explain.
- Be concise and say plainly what you did and what you could not do.
`)
	b.WriteString("\n" + tool.UntrustedNotice + "\n")
	fmt.Fprintf(&b, "\nToday is %s (UTC).\n", now.UTC().Format("Monday 2 January 2006"))
	if workspace != "" {
		fmt.Fprintf(&b, "The workspace folder is %s.\n", workspace)
	}
	if names := tools.Names(); len(names) > 0 {
		fmt.Fprintf(&b, "Your tools: %s.\n", strings.Join(names, ", "))
	}
	return b.String()
}

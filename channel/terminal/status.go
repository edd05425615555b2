package terminal

import (
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
)

// displayName turns a role name into the seeds' display form
// (web_crawler → WebCrawler).
func displayName(role string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(role, func(r rune) bool { return r == '_' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// StatusLine is a one-line status for people (seed 000 section 1.3):
// "🔍 S-7f3a2b WebCrawler running (45s, 12k tokens, 3.10¢): reading …",
// with the run's figures as the core gives them to every surface.
func StatusLine(st ava.Subagent) string {
	icon := map[lifecycle.Status]string{lifecycle.Queued: "⏳", lifecycle.Pending: "⏳", lifecycle.Running: "🔍", lifecycle.Success: "✅",
		lifecycle.Cancelled: "🛑", lifecycle.Interrupted: "⚠️"}[st.Status]
	if icon == "" {
		icon = "❌"
	}
	status := string(st.Status)
	switch {
	case st.WaitingForUser:
		icon, status = "❓", "waiting_for_user"
	case st.Stalled:
		icon, status = "⏸", "stalled"
	case st.Status == lifecycle.Queued && st.QueuePosition > 0:
		status = fmt.Sprintf("queued #%d", st.QueuePosition)
	}
	line := fmt.Sprintf("%s %s %s %s (%s, %s tokens, %s)", icon, st.ID, displayName(st.Role), status,
		Elapsed(st.Elapsed), compact(st.Tokens), money.Spend(st.CostCents, st.Tokens, false))
	if st.Activity != "" && !st.Status.Final() {
		line += ": " + st.Activity
	}
	return line
}

// Elapsed is a run's active time as every terminal line shows it (the
// status line, progress and completion lines), rounded to the second, so
// that a completion line and the list (ava ps) read the same figure alike.
func Elapsed(d time.Duration) string { return d.Round(time.Second).String() }

func compact(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// SubagentEventLine is the status line of a parent's subagent event (spawn,
// progress, completion) with the subagent's ID, or "" for other events.
func SubagentEventLine(ev event.Event) string {
	var c struct {
		Role       string `json:"role"`
		SubagentID string `json:"subagentId"`
	}
	if ev.Decode(&c) != nil {
		return ""
	}
	line := EventLine(c.Role, ev)
	if line == "" {
		return ""
	}
	return line + " [" + c.SubagentID + "]"
}

// EventLine renders a subagent's event as a channel status line (seed 001
// section 10), or "" for events channels do not show.
func EventLine(role string, ev event.Event) string {
	name := "Subagent [" + displayName(role) + "]"
	switch ev.Type {
	case event.SubagentSpawn:
		return "🔍 " + name + ": Starting..."
	case event.Activity:
		var c event.TextContent
		_ = ev.Decode(&c)
		return "🔍 " + name + ": " + c.Text + "..."
	case event.ToolCall:
		var c event.ToolCallContent
		_ = ev.Decode(&c)
		args := string(c.Args)
		if len(args) > 80 {
			args = args[:80] + "…"
		}
		return fmt.Sprintf("🔍 %s: %s %s", name, c.Name, args)
	case event.SubagentProgress:
		var c event.SubagentProgressContent
		_ = ev.Decode(&c)
		line := fmt.Sprintf("⏳ %s still working", name)
		if c.Activity != "" {
			line += ": " + c.Activity
		}
		return line + fmt.Sprintf(" (%s, %s tokens)", Elapsed(time.Duration(c.ElapsedMs)*time.Millisecond), compact(c.Tokens))
	case event.Stalled:
		var c event.StalledContent
		_ = ev.Decode(&c)
		return fmt.Sprintf("⏸ %s: no progress for %s", name, (time.Duration(c.IdleMs) * time.Millisecond).Round(time.Second))
	case event.UserQuestion:
		var c event.QuestionContent
		_ = ev.Decode(&c)
		return fmt.Sprintf("❓ %s asks (%s): %s", name, c.QuestionID, Printable(c.Question))
	case event.QuestionAnswered:
		var c event.AnsweredContent
		_ = ev.Decode(&c)
		switch c.By {
		case "timeout":
			return fmt.Sprintf("⌛ %s: no answer to %s in time; it goes on without one", name, c.QuestionID)
		case "cancelled":
			return fmt.Sprintf("🛑 %s: stopped; question %s is closed", name, c.QuestionID)
		}
		who := "your"
		if c.By == "orchestrator" {
			who = "Ava's"
		}
		return fmt.Sprintf("✉️ %s: got %s answer to %s: %s", name, who, c.QuestionID, Printable(c.Answer))
	case event.SubagentComplete:
		var c event.SubagentCompleteContent
		_ = ev.Decode(&c)
		took := Elapsed(time.Duration(c.DurationMs) * time.Millisecond)
		spent := money.Spend(c.CostCents, c.Tokens, false)
		if c.Status == lifecycle.Success {
			return fmt.Sprintf("✅ %s: Complete (%s, %s)", name, took, spent)
		}
		return fmt.Sprintf("❌ %s: %s (%s, %s)", name, c.Status, took, spent)
	}
	return ""
}

// Printable drops the control characters of model- and tool-controlled
// text (escape sequences could rewrite the screen, set the window title or
// the clipboard), keeping newlines and tabs.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !isControl(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isControl reports a C0 or C1 control character other than newline and
// tab, or DEL.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

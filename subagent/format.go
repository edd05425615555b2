package subagent

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/avaagent/ava/estimate"
	"github.com/avaagent/ava/internal/money"
)

// FormatProposal shows a proposal to the person as in seed 000 section
// 2.1: what will be spawned and why, the estimate, and the question.
func FormatProposal(p Proposal) string {
	var b strings.Builder
	if p.Mode == ModeSingle {
		fmt.Fprintf(&b, "I'll spawn a %s subagent for: %s\n", p.Role, firstLine(p.Task, 200))
	} else {
		fmt.Fprintf(&b, "I'll spawn %d subagents (%s, %s):\n", len(p.Tasks), p.Mode, p.Role)
		for i, t := range p.Tasks {
			fmt.Fprintf(&b, "  %d. %s — %s\n", i+1, p.Spawn.Configs[i].Role, firstLine(t, 160))
		}
	}
	if p.Rationale != "" {
		fmt.Fprintf(&b, "Why: %s\n", firstLine(p.Rationale, 300))
	}
	e := p.Estimate
	fmt.Fprintf(&b, "Estimated%s:\n", basisNote(e))
	fmt.Fprintf(&b, "• Time: %s\n", FormatRange(e.MinSeconds, e.MaxSeconds, e.TypicalSeconds))
	fmt.Fprintf(&b, "• Cost: up to %s", money.Cents(e.MaxCostCents))
	if e.TypicalCostCents > 0 {
		fmt.Fprintf(&b, " (typically %s)", money.Cents(e.TypicalCostCents))
	}
	fmt.Fprintf(&b, "\n• Tools: %s\n• Model: %s\n", strings.Join(e.Tools, ", "), e.Model)
	fmt.Fprintf(&b, "Proceed? [Yes/No] (%s; or a change: \"use haiku\", \"max $1\", \"only 2 minutes\"; expires in %s)",
		p.ID, formatDuration(p.ExpiresAt.Sub(p.CreatedAt)))
	return b.String()
}

func basisNote(e estimate.Estimate) string {
	if e.Basis == "history" {
		return fmt.Sprintf(" (from %d past runs)", e.Runs)
	}
	return " (from the limits: no past runs yet)"
}

// FormatRange shows a time range the way seed 000 does: "~5-10 minutes",
// "~10-45 seconds", with the typical time when known.
func FormatRange(minS, maxS, typical int) string {
	var s string
	if maxS < 120 {
		s = fmt.Sprintf("~%d-%d seconds", minS, maxS)
		if typical > 0 {
			s += fmt.Sprintf(" (typically %d)", typical)
		}
		return s
	}
	lo, hi := int(math.Floor(float64(minS)/60)), int(math.Ceil(float64(maxS)/60))
	if lo == 0 {
		s = fmt.Sprintf("~%d seconds-%d minutes", minS, hi)
	} else {
		s = fmt.Sprintf("~%d-%d minutes", lo, hi)
	}
	if typical > 0 {
		s += fmt.Sprintf(" (typically %s)", formatDuration(time.Duration(typical)*time.Second))
	}
	return s
}

func formatDuration(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int(math.Round(d.Minutes())))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

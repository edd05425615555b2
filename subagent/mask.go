package subagent

import (
	"github.com/avaagent/ava/redact"
)

// Results leave the process through many surfaces (the HTTP API, MCP,
// the command line, the chat channels, the orchestrator's tools and the
// next step of a chain), and all of them read a run through its Handle:
// Result, Wait and Status. Those accessors mask what they return with
// the manager's redactor (Options.Redactor), the same one the store and
// the event hub use, so that a secret a subagent read is masked on every
// surface as it is in the store, and no surface can forget to. Masked
// and RunStatus.Masked are the two functions that do it; a later application core
// calls them in its own place.

// Masked returns a copy of r with every free text masked: the summary,
// the output, the error and the partial work. Identifiers, statuses and
// figures are not free text. A nil redactor still masks the credential
// formats (a zero redact.Redactor).
func (r Result) Masked(red *redact.Redactor) Result {
	red = orPatterns(red)
	r.Summary = red.String(r.Summary)
	r.Output = red.JSON(r.Output)
	r.Error = red.String(r.Error)
	if r.Partial != nil {
		p := Partial{Text: red.String(r.Partial.Text), ToolResults: make([]PartialTool, len(r.Partial.ToolResults))}
		for i, t := range r.Partial.ToolResults {
			t.Excerpt = red.String(t.Excerpt)
			p.ToolResults[i] = t
		}
		r.Partial = &p
	}
	return r
}

// Masked returns a copy of s with its free text masked: the task, the
// current activity (which may quote a tool's arguments), the error and
// the result.
func (s RunStatus) Masked(red *redact.Redactor) RunStatus {
	red = orPatterns(red)
	s.Task = red.String(s.Task)
	s.Activity = red.String(s.Activity)
	s.Error = red.String(s.Error)
	if len(s.Result) > 0 {
		s.Result = red.JSON(s.Result)
	}
	return s
}

// orPatterns is red, or a redactor of the credential formats only when
// red is nil: results are never handed out unmasked.
func orPatterns(red *redact.Redactor) *redact.Redactor {
	if red == nil {
		return &redact.Redactor{}
	}
	return red
}

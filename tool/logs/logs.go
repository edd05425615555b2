// Package logs is the orchestrator's read_ava_logs tool: Ava reading her
// own audit log and subagent traces to diagnose what happened.
package logs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// Default and maximum entries returned.
const (
	DefaultLast = 50
	MaxLast     = 500
	// maxOutput caps the tool's output in bytes.
	maxOutput = 40_000
)

// Args are read_ava_logs' arguments (seed 000 section 3.5).
type Args struct {
	SubagentID string   `json:"subagent_id,omitempty" jsonschema:"read this subagent's whole trace (S-xxxxxx)"`
	LastN      int      `json:"last_n,omitempty" jsonschema:"how many of the most recent matching entries (default 50, at most 500)"`
	Search     string   `json:"search,omitempty" jsonschema:"case-insensitive text to look for"`
	Since      string   `json:"since,omitempty" jsonschema:"only entries after this: 30m, 1h, 2d, '1 hour ago', yesterday, a date or RFC 3339"`
	Types      []string `json:"types,omitempty" jsonschema:"only these event types, e.g. Error, ToolCall, SubagentComplete"`
	Session    string   `json:"session,omitempty" jsonschema:"only this session key"`
}

// New returns read_ava_logs over the data root's logs.
func New(r *audit.Reader, now func() time.Time) tool.Tool {
	if now == nil {
		now = time.Now
	}
	return tool.NewFunc("read_ava_logs",
		"Read Ava's audit logs or a subagent's trace. Use it to diagnose issues, review past conversations, or inspect subagent runs. Without filters it returns the last 50 entries of all agents.",
		func(ctx context.Context, a Args) (tool.Result, error) { return run(ctx, r, now(), a) })
}

func run(ctx context.Context, r *audit.Reader, now time.Time, a Args) (tool.Result, error) {
	q, err := query(a, now)
	if err != nil {
		return tool.Errorf("read_ava_logs: %v", err), nil
	}
	evs, skips, err := r.Query(ctx, q)
	if err != nil {
		return tool.Errorf("read_ava_logs: %v", err), nil
	}
	var b strings.Builder
	for _, ev := range evs {
		line := audit.FormatLine(ev, audit.FormatOptions{ShowAgent: true, MaxContent: 300})
		if b.Len()+len(line) > maxOutput {
			fmt.Fprintf(&b, "[output cut at %d bytes: ask for fewer entries or narrow the search]\n", maxOutput)
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if len(evs) == 0 {
		b.WriteString("no matching log entries\n")
	}
	for _, s := range skips {
		fmt.Fprintf(&b, "[skipped a damaged line: %s]\n", s)
	}
	return tool.Result{Output: b.String()}, nil
}

func query(a Args, now time.Time) (audit.Query, error) {
	q := audit.Query{Search: a.Search, Session: a.Session, Limit: a.LastN}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultLast
	case q.Limit < 0 || q.Limit > MaxLast:
		return q, fmt.Errorf("last_n %d: want 1 to %d", a.LastN, MaxLast)
	}
	if a.SubagentID != "" {
		if !store.ValidShortID(a.SubagentID) {
			return q, fmt.Errorf("subagent_id %q: want S- and six lowercase hex characters", a.SubagentID)
		}
		q.Agent = a.SubagentID
	}
	if a.Since != "" {
		t, err := audit.ParseTime(a.Since, now)
		if err != nil {
			return q, err
		}
		q.Since = t
	}
	for _, t := range a.Types {
		typ, ok := auditType(t)
		if !ok {
			return q, fmt.Errorf("type %q: want one of %v", t, event.AuditTypes)
		}
		q.Types = append(q.Types, typ)
	}
	return q, q.Validate()
}

func auditType(s string) (event.Type, bool) {
	for _, t := range event.AuditTypes {
		if strings.EqualFold(string(t), s) {
			return t, true
		}
	}
	return "", false
}

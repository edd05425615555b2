package ava

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/config"
)

// LogQuery selects audit log entries (package audit: agent, types, time
// range, search, session, user, limit).
type LogQuery = audit.Query

// LogEntry is one audit log entry: the event and its JSON line.
type LogEntry = audit.Entry

// LogReader is a reader of the audit log.
type LogReader = audit.Reader

// Logs returns the audit entries q selects, and what could not be read
// (a corrupt line is skipped and named, never fatal). With PostgreSQL the
// whole cluster's entries are read from the store; otherwise the data
// root's files. A malformed query is ErrInvalid.
func (r *Runtime) Logs(ctx context.Context, q LogQuery) ([]LogEntry, []audit.Skip, error) {
	if err := q.Validate(); err != nil {
		return nil, nil, invalidf("%v", err)
	}
	entries, skips, err := r.LogReader().QueryEntries(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("read the audit log: %w", err)
	}
	return entries, skips, nil
}

// LogReader returns a reader of the runtime's audit log (for following
// and resolving subagent traces as `ava logs` does).
func (r *Runtime) LogReader() *LogReader {
	return r.in.LogReader(audit.ReaderOptions{Logger: r.in.Log})
}

// History returns the last n audit entries of a session (its own agent
// and its subagents' announcements; Trace reads one subagent's own
// steps), one formatted line each, as `ava logs --session` prints them.
// Its errors are Logs'.
func (r *Runtime) History(ctx context.Context, key string, n int) ([]string, error) {
	entries, _, err := r.Logs(ctx, LogQuery{Session: key, Limit: n})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	return formatLines(entries), nil
}

// Trace returns the last n steps of subagent id (ID or unique prefix),
// one formatted line each, as `ava logs S-…` prints them. Within a
// session (session != ""), only that session's subagents are read:
// another's is ErrNotFound, so a chat reads only its own. Its other
// errors are Subagent's and Logs'.
func (r *Runtime) Trace(ctx context.Context, session, id string, n int) ([]string, error) {
	sa, err := r.Subagent(ctx, id)
	if err != nil {
		return nil, err
	}
	if session != "" && sa.Parent != session {
		return nil, fmt.Errorf("subagent %s in session %s: %w", strings.TrimSpace(id), session, ErrNotFound)
	}
	entries, _, err := r.Logs(ctx, LogQuery{Agent: sa.ID, Limit: n})
	if err != nil {
		return nil, fmt.Errorf("trace of %s: %w", sa.ID, err)
	}
	return formatLines(entries), nil
}

// OpenLogReader returns a reader of the audit log of cfg without opening
// a runtime (`ava logs` needs no daemon and writes nothing), and a
// function releasing it. With a PostgreSQL store it reads the cluster's
// events from it, opened read-only; otherwise the data root's files.
func OpenLogReader(ctx context.Context, cfg config.Config, log *slog.Logger, opts audit.ReaderOptions) (*LogReader, func() error, error) {
	return app.OpenLogReader(ctx, cfg, log, opts)
}

// formatLines are entries as `ava logs` prints them, one line each.
func formatLines(entries []LogEntry) []string {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, audit.FormatLine(e.Event, audit.FormatOptions{}))
	}
	return lines
}

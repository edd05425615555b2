package ava

import (
	"context"
	"fmt"
	"strings"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/store"
)

// ChannelStore keeps what a chat channel (Telegram) received, so that a
// restart neither loses an update nor handles one twice, and which
// session each chat talks to (package store).
type ChannelStore = store.ChannelStore

// ChannelUpdate is one update a chat channel received, as stored.
type ChannelUpdate = store.ChannelUpdate

// ChannelUpdates is the runtime's store of chat channels' updates and
// chat sessions: a channel saves an update before it acknowledges it and
// marks it handled once answered.
func (r *Runtime) ChannelUpdates() ChannelStore { return r.in.Store }

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
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		lines = append(lines, audit.FormatLine(e.Event, audit.FormatOptions{}))
	}
	return lines, nil
}

package tool

import (
	"context"
	"errors"
)

// ErrForbidden is returned (wrapped) when the calling agent may not do
// what it asked: a subagent spawning subagents or writing memory.
var ErrForbidden = errors.New("not allowed for this agent")

// Caller identifies the agent making a tool call. The agent loop puts it
// in the context of every call, so a tool can enforce who may use it
// whatever tool list the caller was given.
type Caller struct {
	// AgentID is "ava" for the orchestrator or a subagent's "S-xxxxxx".
	AgentID string
	// SessionKey is the caller's session ("ava:cli:…", "ava:subagent:S-…").
	SessionKey string
	// Subagent is true for subagents: they may not spawn subagents or
	// write memory.
	Subagent bool
	// Workspace is the folder file and shell tools work in.
	Workspace string
	// User is the human the agent acts for, when known.
	User string
	// ProcessNetwork lets the process tools reach the network, only
	// through the sandbox's egress proxy; false means no network.
	ProcessNetwork bool
	// WorkspaceReadOnly makes the workspace read-only to the process
	// tools' commands.
	WorkspaceReadOnly bool
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller in ctx, and whether there was one.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// ProgressFunc receives a tool's progress notes ("fetched 3 of 5 pages").
type ProgressFunc func(note string)

type progressKey struct{}

// WithProgress returns ctx carrying f, which tools call to report
// progress. The agent loop uses it to tell a slow tool from a stuck one.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// Progress reports a progress note to whoever listens in ctx, if anyone.
func Progress(ctx context.Context, note string) {
	if f, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && f != nil {
		f(note)
	}
}

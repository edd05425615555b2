package mcpserver

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Causes with which the server itself ends a waited call (the client's
// own cancellation, notifications/cancelled, has no cause of ours).
var (
	// ErrShuttingDown ends the calls still waited for when the daemon's
	// grace period is over: they are answered with their runs' ends.
	ErrShuttingDown = errors.New("the server is shutting down")
	// ErrSessionClosed ends the calls of an MCP session the client
	// terminated (DELETE /mcp): their runs are cancelled.
	ErrSessionClosed = errors.New("the MCP session was closed")
)

// inflight counts work in progress and tells when there is none.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func newInflight() *inflight {
	idle := make(chan struct{})
	close(idle)
	return &inflight{idle: idle}
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.idle)
	}
}

// idleCh returns a channel closed when nothing is in progress.
func (f *inflight) idleCh() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idle
}

// call is one tools/call request being handled.
type call struct {
	session string
	cancel  context.CancelCauseFunc
}

// calls are the tools/call requests being handled, by MCP session, so
// that a session's termination or the daemon's shutdown can end them
// (the SDK waits for them when a session closes, and does not cancel
// them itself).
type calls struct {
	mu   sync.Mutex
	set  map[*call]struct{}
	busy *inflight
}

func newCalls() *calls {
	return &calls{set: map[*call]struct{}{}, busy: newInflight()}
}

// middleware tracks each tools/call for the time its handler runs.
func (c *calls) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctx, done := c.add(ctx, sessionID(req))
		defer done()
		return next(ctx, method, req)
	}
}

// add registers a call of session; done unregisters it.
func (c *calls) add(ctx context.Context, session string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	k := &call{session: session, cancel: cancel}
	c.mu.Lock()
	c.set[k] = struct{}{}
	c.mu.Unlock()
	c.busy.add()
	return ctx, func() {
		c.mu.Lock()
		delete(c.set, k)
		c.mu.Unlock()
		cancel(nil)
		c.busy.done()
	}
}

// cancel ends the calls of session (every call when session is "")
// with cause, and reports how many it ended.
func (c *calls) cancel(session string, cause error) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.set {
		if session == "" || k.session == session {
			k.cancel(cause)
			n++
		}
	}
	return n
}

// sessionID is the ID of the MCP session a request came in ("" over
// stdio).
func sessionID(req mcp.Request) string {
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		return ss.ID()
	}
	return ""
}

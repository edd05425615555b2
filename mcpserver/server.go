// Package mcpserver serves Ava's subagent tools over the Model Context
// Protocol (the official Go SDK, github.com/modelcontextprotocol/go-sdk):
// `ava mcp` over stdio, and the daemon's /mcp route over streamable
// HTTP (mounted by package gateway behind its token and origin checks).
//
// The MCP client is the person, not the orchestrator. Every call goes
// through the application core (ava.Runtime), like `ava spawn`, the HTTP
// API and the chat channels: spawns (Spawn, SpawnGroup), follow-ups,
// decisions on proposals, answers to questions, the subagents' status
// with the figures every surface shows, and the logs; so hierarchy
// rules, limits, the confirmation policy, masking and the audit log all
// apply, and a failure is answered by its ava.Kind (errors.go). Each MCP
// session is one parent session key, ava:mcp:<8 hex> (stdio: one per
// server process).
//
// The spawn tools take the orchestrator's arguments (ava.SpawnArgs and
// ava.GroupArgs: one definition, one schema), except context_mode fork,
// which an MCP call refuses: it has no Ava conversation to fork.
//
// Tools: spawn_subagent (its result is the structured result of seed 001,
// also as structured content with an output schema), spawn_subagents
// (parallel or chain), subagent_status, list_subagents, cancel_subagent,
// send_subagent (a follow-up to a finished subagent) and read_ava_logs.
// A waited spawn reports progress through MCP progress notifications
// while it runs (when the request carries a progress token), and the
// client's cancellation of the request cancels the subagent. When the
// confirmation policy asks, the person is asked with an MCP elicitation
// request if the client supports it (yes or no, and a change in words,
// read as the chat reads one); otherwise nothing starts and the tool
// result says the spawn awaits confirmation and where to give it.
// The roles are resources (ava://roles/<name>), so a client can
// discover them.
//
// A request the client cancelled gets no response (cancelled.go, and
// the stdio transport, stdio.go, which also answers bad lines and
// batches with JSON-RPC errors and goes on). The tools/call requests in
// flight are tracked per session (calls.go), so that a session's DELETE
// and the daemon's Shutdown end them instead of waiting for their runs.
package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/logs"
)

// Defaults of Options.
const (
	// DefaultPollEvery is how often a waited spawn looks at its
	// subagents' status.
	DefaultPollEvery = 500 * time.Millisecond
	// DefaultProgressEvery is the longest a waited spawn goes without a
	// progress notification while its subagents run.
	DefaultProgressEvery = 5 * time.Second
	// SessionIdle is how long an MCP session over HTTP may go without a
	// request before it is closed (a request in flight, such as a waited
	// spawn, keeps it open).
	SessionIdle = 30 * time.Minute
)

// SessionPrefix starts the parent session key of an MCP session.
const SessionPrefix = "ava:mcp:"

// Options configure a Server.
type Options struct {
	// Runtime is the opened Ava the tools act on (not opened read-only:
	// spawns would fail with ava.ErrReadOnly).
	Runtime *ava.Runtime
	// User is the person the MCP client acts for, when known (recorded
	// with the spawns).
	User string
	// Version is the server's version as told to clients.
	Version string
	// PollEvery and ProgressEvery pace a waited spawn's progress
	// notifications (defaults DefaultPollEvery, DefaultProgressEvery):
	// the status is looked at every PollEvery and a notification sent
	// when it changed, or ProgressEvery after the last one.
	PollEvery, ProgressEvery time.Duration
	// Accepting, when set, says whether new work may start: a non-nil
	// error (the daemon shutting down) refuses spawns and follow-ups.
	Accepting func() error
	Logger    *slog.Logger
}

// Server is Ava's MCP server. One Server serves any number of MCP
// sessions (over stdio, in-memory transports or streamable HTTP).
type Server struct {
	opt  Options
	rt   *ava.Runtime
	log  *slog.Logger
	mcp  *mcp.Server
	salt []byte
	// stdioKey is the parent session key of a session without an ID
	// (stdio and in-memory transports): one per server process.
	stdioKey string
	// logs is read_ava_logs over the runtime's audit log.
	logs tool.Tool
	// calls are the tools/call requests being handled; its busy count
	// also has the HTTP POSTs being served (a call's answer is delivered
	// when its POST ends).
	calls *calls
	// cancelled are the requests over HTTP their clients cancelled
	// (cancelled.go).
	cancelled *cancelledSet
}

// New returns a server over opt.Runtime.
func New(opt Options) (*Server, error) {
	if opt.Runtime == nil {
		return nil, errors.New("mcpserver: a runtime (ava.Open) is required")
	}
	if opt.PollEvery <= 0 {
		opt.PollEvery = DefaultPollEvery
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = DefaultProgressEvery
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("mcpserver: session key salt: %w", err)
	}
	s := &Server{opt: opt, rt: opt.Runtime, log: opt.Logger.With("component", "mcp"), salt: salt,
		stdioKey: SessionPrefix + hex.EncodeToString(salt[:4]), logs: logs.New(opt.Runtime.LogReader(), nil),
		calls: newCalls(), cancelled: newCancelledSet()}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "ava", Title: "Ava subagents", Version: opt.Version},
		&mcp.ServerOptions{Logger: s.log, Instructions: instructions, Capabilities: &mcp.ServerCapabilities{}})
	s.mcp.AddReceivingMiddleware(s.calls.middleware)
	if err := s.addTools(); err != nil {
		return nil, err
	}
	s.addRoles()
	return s, nil
}

const instructions = `Ava runs subagents: focused agents with a role (tools, model, limits) that work on one task and return a structured result. ` +
	`Spawn one with spawn_subagent (waits for the result unless background is true), several with spawn_subagents, and follow them with subagent_status, list_subagents, cancel_subagent and send_subagent. ` +
	`The roles are resources under ava://roles/.`

// MCP is the underlying SDK server (to connect other transports).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one MCP session over t (for example &mcp.StdioTransport{})
// until the client disconnects or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	if err := s.mcp.Run(ctx, t); err != nil && ctx.Err() == nil {
		return fmt.Errorf("mcp server: %w", err)
	}
	return nil
}

// Serve serves one MCP session of newline-delimited JSON-RPC messages
// read from r and written to w (`ava mcp`: stdin and stdout) until the
// client closes r or ctx is done. A line that is not a JSON-RPC message
// is answered with an error and the session goes on (lineTransport).
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.Run(ctx, &lineTransport{r: readCloser(r), w: writeCloser(w), log: s.log})
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{w}
}

// Handler returns the streamable HTTP handler (POST, GET and DELETE
// /mcp). It does no authentication of its own: mount it behind the
// daemon's guard (token, Host and Origin checks), which also stands in
// for the SDK's own localhost protection. A session idle for
// SessionIdle is closed.
//
// A DELETE (the client terminates its session) first cancels the
// session's calls still waiting, as if each had been cancelled, so that
// their runs stop and the session closes at once (the SDK waits for a
// closing session's calls and does not cancel them). POSTs are counted
// until they end, which is when a call's answer has been delivered
// (Idle); the answer to a request its client cancelled is not sent
// (cancelled.go).
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Logger: s.log, DisableLocalhostProtection: true, SessionTimeout: SessionIdle})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			if id := r.Header.Get("Mcp-Session-Id"); id != "" {
				if n := s.calls.cancel(id, ErrSessionClosed); n > 0 {
					s.log.Info("mcp session closed by its client: its waited calls are cancelled", "calls", n)
				}
			}
		case http.MethodPost:
			s.calls.busy.add()
			defer s.calls.busy.done()
			session := r.Header.Get("Mcp-Session-Id")
			if id, ok := s.cancelled.peekPOST(r, session); ok {
				w = &cancelFilter{ResponseWriter: w, set: s.cancelled, session: session, id: id}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Idle returns a channel closed when no tool call is being handled and
// no HTTP POST is being served: every answer has been delivered.
func (s *Server) Idle() <-chan struct{} { return s.calls.busy.idleCh() }

// Shutdown ends the MCP side of a daemon's shutdown, after its drain
// and after the runs still going were stopped: it lets the waited calls
// deliver their runs' ends until ctx is done, then ends those still
// waiting with ErrShuttingDown (each answers with its run's end as it
// is then), waits for them a little more, and closes every session.
func (s *Server) Shutdown(ctx context.Context) {
	select {
	case <-s.Idle():
	case <-ctx.Done():
		if n := s.calls.cancel("", ErrShuttingDown); n > 0 {
			s.log.Warn("mcp calls still waiting at shutdown are ended", "calls", n)
		}
		select {
		case <-s.Idle():
		case <-time.After(shutdownAnswer):
			s.log.Warn("mcp calls not answered at shutdown", "after", shutdownAnswer)
		}
	}
	s.CloseSessions()
}

// shutdownAnswer is how long Shutdown waits for the calls it ended to
// answer.
const shutdownAnswer = 5 * time.Second

// CloseSessions closes every connected MCP session: their streams end.
// The SDK waits for a session's calls in flight, so end them first
// (Shutdown does).
func (s *Server) CloseSessions() {
	for ss := range s.mcp.Sessions() {
		if err := ss.Close(); err != nil {
			s.log.Debug("close mcp session", "err", err)
		}
	}
}

// parentKey is the parent session key of an MCP session: derived from
// its ID (streamable HTTP), or the process's one (stdio).
func (s *Server) parentKey(ss *mcp.ServerSession) string {
	if ss == nil || ss.ID() == "" {
		return s.stdioKey
	}
	sum := sha256.Sum256(append(append([]byte{}, s.salt...), ss.ID()...))
	return SessionPrefix + hex.EncodeToString(sum[:4])
}

// accepting reports why new work may not start, or nil.
func (s *Server) accepting() error {
	if s.opt.Accepting == nil {
		return nil
	}
	return s.opt.Accepting()
}

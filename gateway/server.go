// Package gateway is Ava's daemon surface: the HTTP API and the
// Server-Sent Event streams of DESIGN.md "HTTP" (with MCP over
// streamable HTTP at /mcp, package mcpserver), over the session
// service and the subagent manager of an app.Instance, with a typed
// client in gateway/client, and the web panel at / (files embedded in
// the binary, see panel.go and docs/panel.md).
//
// Streams. GET /api/chat/stream replays a session's kept events after a
// sequence number (the after parameter, or Last-Event-ID, which wins)
// from the store, then follows them live. Every SSE message carries
// "event:" (the event type); kept events also carry "id:" (their
// per-session sequence number), live-only ones (text deltas, activity,
// stalls, retries) and the daemon's own session and done events carry
// none, so a client's Last-Event-ID is always the last kept event it got
// and a reconnect with it loses nothing and repeats nothing, also after
// the events left memory or the daemon restarted. A comment line is
// sent every Options.Heartbeat (15 s) so proxies keep the connection.
// A slow client never slows a publisher: each stream reads the session's
// journal at its own pace and catches up from the store.
//
// Safety. The server always needs a token (the daemon's: AVA_TOKEN, or
// the one it keeps in the data root, see LoadOrCreateToken), and
// refuses to start on a non-loopback address without AVA_TOKEN. Every
// route needs it but the public ones, named where the routes are
// registered (/healthz, /readyz, the API's OpenAPI document at
// /api/openapi.json and the web panel's static files, which hold no
// data), as a bearer token (compared in constant time)
// or as a web panel login: the session cookie together with its secret
// in the X-Ava-Login header, kept in the store and revocable (see
// auth.go). Every route refuses a Host that is not the bound address or
// localhost (DNS rebinding), and state-changing routes refuse a foreign
// Origin and any body that is not JSON. Bodies are size-limited and
// time-limited (Timeouts), connections are capped, those that have not
// authenticated tightly (ConnLimits); every error is {"error": "..."}
// with its status code.
//
// Description. openapi.json, embedded and served at /api/openapi.json,
// describes every route of the API (Server.Routes); a test keeps the
// two equal and checks real answers against its schemas.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/mcpserver"
)

// DefaultHeartbeat is how often an idle stream gets a comment line.
const DefaultHeartbeat = 15 * time.Second

// DefaultMaxBody bounds a request body.
const DefaultMaxBody = 1 << 20

// maxMessage bounds one chat message.
const maxMessage = 256 << 10

// Options configure a Server.
type Options struct {
	// Runtime is the opened Ava the API serves (not opened read-only):
	// every route calls only it.
	Runtime *ava.Runtime
	// Addr is the address the server is bound to (host:port), for the
	// Host and Origin checks and the token rule.
	Addr string
	// Token is required (as a bearer token, or through a session
	// cookie it signs) on every route but /healthz, /readyz and the web
	// panel's static files. It must be set.
	Token string
	// AllowedHosts are extra host names a request's Host may name.
	AllowedHosts []string
	// Heartbeat is the interval of comment lines on idle streams
	// (default DefaultHeartbeat).
	Heartbeat time.Duration
	// MaxBody bounds request bodies (default DefaultMaxBody).
	MaxBody int64
	// Timeouts bound slow and idle connections (zero fields:
	// DefaultTimeouts); HTTPServer applies them.
	Timeouts Timeouts
	// Conns bound the connections, tighter for those that have not
	// authenticated (zero fields: their defaults); Listener and
	// HTTPServer apply them.
	Conns ConnLimits
	// APITimeout is the deadline of every API request but the streams
	// (zero: the configuration's AVA_API_TIMEOUT, else
	// DefaultAPITimeout). One not answered by then gets 503 with
	// Retry-After, and its store calls give up (see bounded).
	APITimeout time.Duration
	// Metrics collects the daemon's metrics (nil: a new one, not fed
	// by events).
	Metrics *Metrics
	Logger  *slog.Logger
}

// Server is the HTTP API. Create it with New, serve its Handler, and
// Drain it before closing the instance.
type Server struct {
	opt     Options
	rt      *ava.Runtime
	log     *slog.Logger
	metrics *Metrics
	guard   guard
	auth    *auth
	conns   *connLimiter
	panel   *panel
	handler http.Handler
	// public are the patterns of the routes that need no token.
	public []string
	// apiRoutes are the patterns of the API's routes (Routes).
	apiRoutes []string

	// draining is closed when the server stops taking work: open
	// streams end, new messages are refused with 503.
	draining  chan struct{}
	drainOnce sync.Once

	// handlers are the bounded handlers still running, some past their
	// deadline (answered 503 already): Drain waits for them.
	handlers sync.WaitGroup

	turnsMu sync.Mutex
	turns   map[*turnRef]struct{} // turns started through the API

	framesMu    sync.Mutex
	frameCaches map[string]*frameCache // by session key, while streamed

	// mcp serves the subagent tools over streamable HTTP at /mcp.
	mcp *mcpserver.Server
	// openAPI serves the API's description, naming this daemon.
	openAPI http.Handler
}

// ErrTokenRequired is returned by New for a non-loopback address
// without a token.
var ErrTokenRequired = errors.New("AVA_TOKEN is required to listen on a non-loopback address")

// New returns a server over opt.Runtime.
func New(opt Options) (*Server, error) {
	if opt.Runtime == nil {
		return nil, errors.New("gateway: a runtime opened for work is required")
	}
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = DefaultHeartbeat
	}
	if opt.MaxBody <= 0 {
		opt.MaxBody = DefaultMaxBody
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics()
	}
	opt.Timeouts = opt.Timeouts.withDefaults()
	if opt.APITimeout <= 0 {
		opt.APITimeout = opt.Runtime.Config().APITimeout
	}
	if opt.APITimeout <= 0 {
		opt.APITimeout = DefaultAPITimeout
	}
	p, err := newPanel()
	if err != nil {
		return nil, err
	}
	g, err := newGuard(opt.Addr, opt.Token, opt.AllowedHosts)
	if err != nil {
		return nil, err
	}
	log := opt.Logger.With("component", "gateway")
	a, err := newAuth(opt.Token, opt.Addr, opt.Runtime.Logins(), log)
	if err != nil {
		return nil, err
	}
	s := &Server{opt: opt, rt: opt.Runtime, log: log, metrics: opt.Metrics,
		guard: g, auth: a, conns: newConnLimiter(opt.Conns, opt.Metrics), panel: p, draining: make(chan struct{}), turns: map[*turnRef]struct{}{},
		frameCaches: map[string]*frameCache{}}
	s.mcp, err = mcpserver.New(mcpserver.Options{Runtime: s.rt, Logger: opt.Logger, Accepting: func() error {
		if s.isDraining() {
			return errDraining
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	if s.openAPI, err = s.openAPIHandler(); err != nil {
		return nil, err
	}
	s.metrics.watch(s.rt)
	routes := s.routes()
	s.public, s.apiRoutes = routes.publics, routes.routes
	s.handler = s.metrics.instrument(bodyDeadline(opt.Timeouts.Body, s.guard.wrap(routes.mux)))
	if s.rt.Tracing() {
		s.handler = traceContext(s.handler)
	}
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics is the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// routes registers the API. Every route needs the token or a session
// (router.handle) but the ones registered with router.public; the
// catch-all 404 too, so an unknown path tells nothing without the token.
func (s *Server) routes() *router {
	rt := &router{mux: http.NewServeMux(), require: s.require, rules: s.stateRules, bound: s.bounded}
	rt.public("GET /healthz", http.HandlerFunc(s.health))
	rt.public("GET /readyz", http.HandlerFunc(s.ready))
	rt.handle("GET /metrics", s.metrics.Handler())
	if s.rt.Config().Role == config.RoleWorker {
		// A worker of a cluster runs subagents; chats, streams and the
		// panel are the gateways'.
		rt.mux.Handle(catchAll, s.fallback(rt.mux, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s: this process is a worker (AVA_ROLE=worker); use a gateway's address", r.Method, r.URL.Path))
		}))
		return rt
	}
	// The API's description holds no data of the daemon (docs/api.md
	// publishes the same), so a client generator or an API explorer may
	// read it before it has the token, like /healthz.
	rt.public("GET /api/openapi.json", s.openAPI)
	rt.stream("POST /api/chat", http.HandlerFunc(s.chat))
	rt.handleFunc("POST /api/chat/stop", s.stop)
	rt.handleFunc(uploadPattern, s.upload)
	rt.handleFunc("GET /api/attachments/{id}", s.attachment)
	rt.stream("GET /api/chat/stream", http.HandlerFunc(s.stream))
	rt.handleFunc("GET /api/subagents", s.listSubagents)
	rt.handleFunc("POST /api/subagents", s.spawn)
	rt.handleFunc("GET /api/subagents/{id}", s.getSubagent)
	rt.handleFunc("GET /api/groups/{id}/findings", s.listFindings)
	rt.handleFunc("GET /api/sessions", s.listSessions)
	rt.handleFunc("GET /api/sessions/{key}", s.getSession)
	rt.handleFunc("PATCH /api/sessions/{key}", s.renameSession)
	rt.handleFunc("GET /api/spawns", s.listSpawns)
	rt.handleFunc("POST /api/spawns/{id}/confirm", s.confirmSpawn)
	rt.handleFunc("GET /api/questions", s.listQuestions)
	rt.handleFunc("POST /api/questions/{id}/answer", s.answerQuestion)
	rt.handleFunc("GET /api/logs", s.logs)
	rt.handleFunc("GET /api/mcp/servers", s.mcpServers)
	rt.handleFunc("GET /api/hooks", s.hooks)
	rt.handleFunc("POST /api/hooks/retry", s.retryHooks)
	rt.handleFunc("GET /api/roles", s.roles)
	rt.handleFunc("POST /api/reload", s.reload)
	rt.credentials("POST /api/login", s.login)
	rt.handleFunc("POST /api/login/link", s.loginLink)
	rt.handleFunc("POST /api/logout", s.logout)
	rt.handleFunc("GET /api/logins", s.listLogins)
	rt.handleFunc("DELETE /api/logins", s.revokeLogins)
	rt.handleFunc("DELETE /api/logins/{id}", s.revokeLogin)
	mcpHandler := s.mcp.Handler()
	for _, m := range []string{"GET", "POST", "DELETE"} {
		rt.stream(m+" /mcp", mcpHandler)
	}
	// The panel's files, each at its exact path: they hold no data
	// (everything comes from the API), and a browser cannot send a
	// bearer header when it loads a page.
	rt.public("GET /{$}", http.HandlerFunc(s.index))
	for _, name := range s.panel.names() {
		rt.asset("GET /"+name, s.panel)
	}
	rt.mux.Handle(catchAll, s.fallback(rt.mux, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s (see docs/api.md, or the OpenAPI document at /api/openapi.json)", r.Method, r.URL.Path))
	}))
	return rt
}

// fallback is the catch-all's handler. With the token (or a session), a
// route's path under another method is 405 with an Allow header
// (methodNotAllowed), whatever its body; anything else goes through
// require to notFound, so that an unknown path or method tells nothing
// without the token.
func (s *Server) fallback(mux *http.ServeMux, notFound http.HandlerFunc) http.Handler {
	gated := s.require(notFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.auth.check(r); err == nil && methodNotAllowed(w, r, mux) {
			return
		}
		gated.ServeHTTP(w, r)
	})
}

// catchAll is the pattern of the route that answers what no other
// route matched (404, or 405 for a route's path under another method).
const catchAll = "/"

// allowMethods are the methods methodNotAllowed tries, in the order the
// Allow header lists them.
var allowMethods = []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPatch,
	http.MethodPost, http.MethodPut}

// methodNotAllowed answers 405 with an Allow header when r's path is a
// route's under other methods, and reports whether it did. ServeMux
// answers 405 itself only when no pattern matches a request, and the
// catch-all, which keeps unknown paths behind the token, matches every
// request; so the catch-all asks the mux which methods would have
// reached another route.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) bool {
	var allow []string
	for _, m := range allowMethods {
		if m == r.Method {
			continue
		}
		probe := &http.Request{Method: m, Host: r.Host, URL: r.URL, Header: http.Header{}}
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != catchAll {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return false
	}
	list := strings.Join(allow, ", ")
	w.Header().Set("Allow", list)
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, list))
	return true
}

// Routes are the patterns ("METHOD /path") of the API's routes, as
// registered: every route but the web panel's static files and the
// catch-all that answers 404. The OpenAPI document served at
// /api/openapi.json describes exactly these.
func (s *Server) Routes() []string { return slices.Clone(s.apiRoutes) }

// PublicRoutes are the route patterns that need no token; every other
// route needs it.
func (s *Server) PublicRoutes() []string { return slices.Clone(s.public) }

// readyTimeout bounds the store check of GET /readyz.
const readyTimeout = 2 * time.Second

// ready answers GET /readyz: 200 when the store answers (the database,
// in a cluster) and the daemon is not draining, else 503 saying why. Its
// config detail says what a reload refused (the daemon runs its
// previous configuration meanwhile) and which changes wait for a
// restart.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.isDraining() {
		writeError(w, http.StatusServiceUnavailable, "draining: shutting down")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.rt.Ping(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("unavailable: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, client.Ready{Status: "ready", Role: s.role(), Config: s.configStatus()})
}

// role is the process's role in a cluster ("all" when embedded).
func (s *Server) role() string {
	if s.rt.Config().Role == "" {
		return config.RoleAll
	}
	return s.rt.Config().Role
}

// health answers GET /healthz.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	h := healthBody(s.rt)
	h.Draining = s.isDraining()
	writeJSON(w, http.StatusOK, h)
}

// Drain stops taking work: open GET streams end, new messages and
// spawns are refused with 503, and it waits until the turns started
// through the API and the running subagents end, or ctx is done. It
// reports how many were still running when it returned.
//
// It looks again after each end, so work that starts meanwhile (a
// subagent a running turn spawns, a queued turn, a chat channel's turn)
// is waited for too, and so are the MCP calls at /mcp until their
// answers are delivered. When it returns, the MCP sessions are closed
// (their streams end): a call still waiting when ctx is done is ended
// first — its run is cancelled and recorded, and the call answered
// with the run's end (mcpserver.Server.Shutdown).
func (s *Server) Drain(ctx context.Context) int {
	s.drainOnce.Do(func() { close(s.draining) })
	left := s.wait(ctx)
	s.mcp.Shutdown(ctx)
	s.waitHandlers(ctx)
	return left
}

// waitHandlers waits until the bounded handlers have returned (those
// answered 503 at their deadline included), or ctx is done.
func (s *Server) waitHandlers(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// wait waits until nothing of running is left or ctx is done, and
// reports how many were still running then.
func (s *Server) wait(ctx context.Context) int {
	for {
		waiting := s.running()
		if len(waiting) == 0 {
			return 0
		}
		select {
		case <-waiting[0]:
		case <-ctx.Done():
			return s.countRunning()
		}
	}
}

func (s *Server) isDraining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}

// running returns the done channels of the API's turns, of the
// running subagents and of the MCP calls in flight.
func (s *Server) running() []<-chan struct{} {
	s.turnsMu.Lock()
	var out []<-chan struct{}
	for t := range s.turns {
		select {
		case <-t.done:
			delete(s.turns, t) // ended: forget it
		default:
			out = append(out, t.done)
		}
	}
	s.turnsMu.Unlock()
	out = append(out, s.rt.Running()...)
	if idle := s.mcp.Idle(); !closed(idle) {
		out = append(out, idle)
	}
	return out
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (s *Server) countRunning() int {
	n := 0
	for _, done := range s.running() {
		select {
		case <-done:
		default:
			n++
		}
	}
	return n
}

// turnRef is a turn started through the API, tracked for Drain.
type turnRef struct{ done <-chan struct{} }

// track records a turn for Drain; ended turns are dropped as Drain
// looks.
func (s *Server) track(done <-chan struct{}) {
	s.turnsMu.Lock()
	defer s.turnsMu.Unlock()
	for t := range s.turns {
		select {
		case <-t.done:
			delete(s.turns, t)
		default:
		}
	}
	s.turns[&turnRef{done: done}] = struct{}{}
}

// isLoopback reports whether host (a name or an IP) is loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

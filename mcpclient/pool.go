package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool"
)

// ErrClosed is returned once the pool is closed.
var ErrClosed = errors.New("MCP client pool is closed")

// Defaults of Options.
const (
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultStartTimeout = 30 * time.Second
	// retryAfter is how long a server that failed to start is not tried
	// again; uses in between get the same error.
	retryAfter = 5 * time.Second
	// closeGrace is how long a stdio server has to exit once its stdin
	// is closed before its process group is killed.
	closeGrace = 2 * time.Second
)

// Options configure a Pool.
type Options struct {
	// Servers are the servers known from the start (the config file's);
	// Add adds more (a role's own).
	Servers []Spec
	// AllowHosts are the non-loopback hosts a URL server may be on.
	AllowHosts []string
	// IdleTimeout stops a server no tool call has used for this long
	// (default DefaultIdleTimeout; negative: never).
	IdleTimeout time.Duration
	// StartTimeout bounds starting a server and listing its tools
	// (default DefaultStartTimeout).
	StartTimeout time.Duration
	// Withhold says why a tool of that name must not be offered (a
	// subagent never gets a spawning tool: role.WithheldReason), or
	// "". It is asked with the server's own tool name and with the
	// prefixed one; tools whose name contains "spawn" are withheld too.
	Withhold func(name string) string
	// Environ is Ava's environment (default os.Environ()): a stdio server
	// gets only its allow-listed variables (PATH, locale, terminal; see
	// shell.CommandEnv), HOME and TMPDIR, then the spec's PassEnv and Env.
	Environ []string
	// Workspace is the folder a sandboxed server sees read-write besides
	// its own; no server starts in it, and PATH folders in it are left
	// out of a server's PATH.
	Workspace string
	// StateDir holds each stdio server's own folder, <StateDir>/<name>:
	// its working folder, and its HOME when sandboxed (default: a folder
	// made for the pool and removed at Close).
	StateDir string
	// SandboxOff runs every stdio server unconfined (AVA_SANDBOX=off);
	// otherwise a server runs in the process sandbox unless its spec
	// says sandbox: false.
	SandboxOff bool
	// Probe reports the sandbox's state; nil means sandbox.Probe. A
	// sandboxed server refuses to start where it is not ready.
	Probe func() sandbox.Status
	// Hide lists folders no sandboxed server sees (the data root); Ava's
	// home folder is always hidden.
	Hide []string
	// EgressGuard refuses the addresses the egress proxy of a server
	// with network: true may dial (the web tools' public-address guard);
	// EgressAllow is its domain allow-list (AVA_EGRESS_ALLOW).
	EgressGuard func(netip.Addr) error
	EgressAllow []string
	// HTTPClient is used for URL servers (default http.DefaultClient).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Pool is a set of MCP servers by name. Servers start on first use and
// are shared by every caller; Close stops them all. It is safe for
// concurrent use.
type Pool struct {
	opt Options
	log *slog.Logger

	// ctx ends at Close, which so cancels starts under way.
	ctx    context.Context
	cancel context.CancelFunc

	// tmpDir is the pool's temporary folder, made on first need and
	// removed at Close: the servers' folders when no StateDir is given
	// or it is in the workspace.
	tmpMu  sync.Mutex
	tmpDir string

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
	wg      sync.WaitGroup
}

// New returns a pool of the servers in opt.Servers, refusing a bad or
// duplicate definition (the error names the server). Nothing starts
// until a server's tools are asked for.
func New(opt Options) (*Pool, error) {
	if opt.IdleTimeout == 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = DefaultStartTimeout
	}
	if opt.Environ == nil {
		opt.Environ = os.Environ()
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	p := &Pool{opt: opt, log: opt.Logger.With("component", "mcpclient"), servers: map[string]*server{}}
	for _, s := range opt.Servers {
		if err := p.Add(s); err != nil {
			return nil, err
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Add adds a server. A server of the same name and the same definition
// is shared; one with another definition is refused.
func (p *Pool) Add(spec Spec) error {
	if spec.IsRef() {
		if err := CheckName(spec.Name); err != nil {
			return err
		}
		return fmt.Errorf("MCP server %s: not defined (give a command or a url, or define it in config.yaml's mcp_servers)", spec.Name)
	}
	if err := spec.Validate(p.opt.AllowHosts); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if old, ok := p.servers[spec.Name]; ok {
		if old.spec.Equal(spec) {
			return nil
		}
		return fmt.Errorf("MCP server %s: defined twice, differently", spec.Name)
	}
	p.servers[spec.Name] = &server{p: p, spec: spec, state: StateNotStarted}
	return nil
}

// Has reports whether a server of that name is defined.
func (p *Pool) Has(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.servers[name]
	return ok
}

// Spec returns the named server's definition.
func (p *Pool) Spec(name string) (Spec, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.servers[name]
	if !ok {
		return Spec{}, false
	}
	return s.spec, true
}

// Tools returns the tools of the named servers, starting each one that
// is not running. A server that cannot be started or lists no tools
// gives an error naming it; the other servers' tools are still
// returned. Tools are sorted by name.
func (p *Pool) Tools(ctx context.Context, names []string) ([]tool.Tool, error) {
	var out []tool.Tool
	var errs []error
	for _, n := range names {
		s, err := p.server(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := s.get(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c.tools...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, errors.Join(errs...)
}

// server returns the named server.
func (p *Pool) server(name string) (*server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	s, ok := p.servers[name]
	if !ok {
		return nil, fmt.Errorf("MCP server %s: not defined", name)
	}
	return s, nil
}

// State is a server's state in this process.
type State string

// Server states.
const (
	StateNotStarted State = "not started"
	StateStarting   State = "starting"
	StateRunning    State = "running"
	StateIdle       State = "stopped (idle)"
	StateExited     State = "exited (restarts on next use)"
	StateFailed     State = "failed"
	StateClosed     State = "closed"
)

// Status is one server as this process sees it.
type Status struct {
	Name string
	// Kind is "stdio" or "url"; Target the command line or the URL.
	Kind, Target string
	State        State
	// PID is a running stdio server's process ID.
	PID int
	// Tools are the offered tools' names while it runs (or after it
	// ran); Withheld the tools it listed that are not offered, with why.
	Tools    []string
	Withheld []string
	// Starts counts how often it was started; Err is the last failure.
	Starts int
	Err    string
	// Confinement says how a stdio server runs: in the sandbox (with or
	// without network), UNSANDBOXED and why, or that the sandbox is
	// unavailable here so it refuses to start; "remote" for a URL.
	Confinement string
}

// Status lists the servers, sorted by name.
func (p *Pool) Status() []Status {
	p.mu.Lock()
	servers := make([]*server, 0, len(p.servers))
	for _, s := range p.servers {
		servers = append(servers, s)
	}
	p.mu.Unlock()
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Close stops every server (a stdio server's whole process group) and
// waits for them. Later uses fail with ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cancel()
	servers := make([]*server, 0, len(p.servers))
	for _, s := range p.servers {
		servers = append(servers, s)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.close)
	}
	wg.Wait()
	p.wg.Wait()
	p.tmpMu.Lock()
	if p.tmpDir != "" {
		_ = os.RemoveAll(p.tmpDir)
	}
	p.tmpMu.Unlock()
	return nil
}

// stateRoot is where the servers' own folders are: StateDir, or the
// pool's temporary folder.
func (p *Pool) stateRoot() (string, error) {
	if p.opt.StateDir != "" {
		return p.opt.StateDir, nil
	}
	return p.tempRoot()
}

// tempRoot makes the pool's temporary folder on first use.
func (p *Pool) tempRoot() (string, error) {
	p.tmpMu.Lock()
	defer p.tmpMu.Unlock()
	if p.tmpDir == "" {
		dir, err := os.MkdirTemp("", "ava-mcp-")
		if err != nil {
			return "", fmt.Errorf("MCP servers' folder: %w", err)
		}
		p.tmpDir = dir
	}
	return p.tmpDir, nil
}

// probe reports the sandbox's state.
func (p *Pool) probe() sandbox.Status {
	if p.opt.Probe != nil {
		return p.opt.Probe()
	}
	return sandbox.Probe()
}

// goTracked runs f in a goroutine Close waits for, unless the pool is
// closed.
func (p *Pool) goTracked(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Go(f)
	return true
}

// server is one configured server and its current connection.
type server struct {
	p    *Pool
	spec Spec

	mu       sync.Mutex
	state    State
	cur      *conn
	starting chan struct{}
	lastErr  error
	failedAt time.Time
	starts   int
	inflight int
	lastUsed time.Time
	idle     *time.Timer
	closed   bool
	// tools and withheld are the last listing's (kept for Status).
	toolNames []string
	withheld  []string
}

// get returns the running connection, starting the server if needed.
func (s *server) get(ctx context.Context) (*conn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("MCP server %s: %w", s.spec.Name, ErrClosed)
		}
		if c := s.cur; c != nil && !c.isDead() {
			s.lastUsed = time.Now()
			s.mu.Unlock()
			return c, nil
		}
		if ch := s.starting; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("MCP server %s: %w", s.spec.Name, context.Cause(ctx))
			}
		}
		if s.lastErr != nil && time.Since(s.failedAt) < retryAfter {
			err := s.lastErr
			s.mu.Unlock()
			return nil, err
		}
		ch := make(chan struct{})
		s.starting, s.state = ch, StateStarting
		s.mu.Unlock()

		c, err := s.start(ctx)

		s.mu.Lock()
		s.starting = nil
		close(ch)
		switch {
		case err != nil && ctx.Err() != nil:
			// The caller gave up: not the server's fault, no back-off.
			s.state = StateNotStarted
			if s.starts > 0 {
				s.state = StateExited
			}
			s.mu.Unlock()
			return nil, err
		case err != nil:
			s.state, s.lastErr, s.failedAt = StateFailed, err, time.Now()
			s.mu.Unlock()
			s.p.log.Warn("MCP server failed to start", "server", s.spec.Name, "err", err)
			return nil, err
		case s.closed:
			s.mu.Unlock()
			c.stop()
			return nil, fmt.Errorf("MCP server %s: %w", s.spec.Name, ErrClosed)
		}
		s.cur, s.state, s.lastErr = c, StateRunning, nil
		s.starts++
		s.lastUsed = time.Now()
		s.toolNames, s.withheld = c.toolNames(), c.withheld
		s.armIdleLocked()
		s.mu.Unlock()
		if !s.p.goTracked(func() { s.watch(c) }) {
			c.stop()
			return nil, fmt.Errorf("MCP server %s: %w", s.spec.Name, ErrClosed)
		}
		s.p.log.Info("MCP server started", "server", s.spec.Name, "pid", c.pid, "tools", len(c.tools))
		return c, nil
	}
}

// watch waits for the connection to end (the process exited, the
// server closed the session, or it was stopped) and reaps it.
func (s *server) watch(c *conn) {
	select {
	case <-c.ended:
	case <-c.stopping:
	}
	c.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != c {
		return
	}
	s.cur = nil
	if !s.closed && s.state == StateRunning {
		s.state = StateExited
		s.p.log.Warn("MCP server exited; it is started again on next use", "server", s.spec.Name, "pid", c.pid, "stderr", c.stderrTail())
	}
}

// begin and end bracket one tool call, for the idle timer.
func (s *server) begin() {
	s.mu.Lock()
	s.inflight++
	s.lastUsed = time.Now()
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
}

func (s *server) end() {
	s.mu.Lock()
	s.inflight--
	s.lastUsed = time.Now()
	s.armIdleLocked()
	s.mu.Unlock()
}

// armIdleLocked (re)starts the idle timer when nothing is in flight.
func (s *server) armIdleLocked() {
	if s.p.opt.IdleTimeout < 0 || s.inflight > 0 || s.closed || s.cur == nil {
		return
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	s.idle = time.AfterFunc(s.p.opt.IdleTimeout, func() { s.p.goTracked(s.idleStop) })
}

// idleStop stops the server if it is still idle, or waits again if it
// was used since the timer was set.
func (s *server) idleStop() {
	s.mu.Lock()
	c := s.cur
	if c == nil || s.inflight > 0 || s.closed {
		s.mu.Unlock()
		return
	}
	if left := s.p.opt.IdleTimeout - time.Since(s.lastUsed); left > 0 {
		s.idle = time.AfterFunc(left, func() { s.p.goTracked(s.idleStop) })
		s.mu.Unlock()
		return
	}
	s.cur, s.state = nil, StateIdle
	s.mu.Unlock()
	s.p.log.Info("MCP server stopped: idle", "server", s.spec.Name, "pid", c.pid, "idle", s.p.opt.IdleTimeout)
	c.stop()
}

// close stops the server for good.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	if s.idle != nil {
		s.idle.Stop()
	}
	c := s.cur
	s.cur = nil
	if s.state != StateNotStarted {
		s.state = StateClosed
	}
	ch := s.starting
	s.mu.Unlock()
	if ch != nil {
		<-ch // a start under way sees closed and stops what it started
	}
	if c != nil {
		c.stop()
	}
}

// status reports the server.
func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.spec.Name, Kind: s.spec.Kind(), Target: s.spec.Target(), State: s.state, Starts: s.starts,
		Tools: slices.Clone(s.toolNames), Withheld: slices.Clone(s.withheld), Confinement: s.confinement()}
	if s.cur != nil {
		st.PID = s.cur.pid
	}
	if s.lastErr != nil {
		st.Err = s.lastErr.Error()
	}
	return st
}

// confinement says how the server runs, for display: loudly when it is
// not sandboxed.
func (s *server) confinement() string {
	switch {
	case s.spec.URL != "":
		return "remote: a URL server, not a process of Ava"
	case !s.spec.Sandboxed():
		return "UNSANDBOXED (sandbox: false): runs with your user's full access"
	case s.p.opt.SandboxOff:
		return "UNSANDBOXED (AVA_SANDBOX=off): runs with your user's full access"
	case s.p.probe().Err() != nil:
		return "sandbox UNAVAILABLE here: refuses to start (set sandbox: false or AVA_SANDBOX=off to run it unconfined)"
	case s.spec.Network:
		return "sandboxed, network only through the egress proxy"
	}
	return "sandboxed, no network"
}

// start starts the server (or connects to it) and lists its tools.
func (s *server) start(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.p.opt.StartTimeout)
	defer cancel()
	stop := context.AfterFunc(s.p.ctx, cancel) // Close cancels a start
	defer stop()
	c := &conn{server: s, ended: make(chan struct{}), stopping: make(chan struct{})}
	var t mcp.Transport
	if s.spec.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: s.spec.URL, HTTPClient: s.p.opt.HTTPClient, MaxRetries: -1, DisableStandaloneSSE: true}
	} else {
		proc, err := s.launch(&c.stderr)
		if err != nil {
			return nil, s.startErr(err, c)
		}
		c.proc, c.pid = proc, proc.pid
		t = &mcp.IOTransport{Reader: proc.stdout, Writer: processPipes{proc}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ava", Version: "1"}, &mcp.ClientOptions{Logger: discardLogger})
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		c.killGroup()
		if serr := c.setupErr(); serr != nil {
			err = serr
		}
		return nil, s.startErr(fmt.Errorf("connect: %w", err), c)
	}
	c.cs = cs
	go func() { // ends when the session does, which stop guarantees
		_ = cs.Wait()
		close(c.ended)
	}()
	if err := c.list(ctx); err != nil {
		c.stop()
		return nil, s.startErr(err, c)
	}
	return c, nil
}

// startErr names the server and adds what it wrote to stderr.
func (s *server) startErr(err error, c *conn) error {
	if tail := c.stderrTail(); tail != "" {
		err = fmt.Errorf("%w (stderr: %s)", err, tail)
	}
	return fmt.Errorf("MCP server %s (%s) failed to start: %w", s.spec.Name, s.spec.Target(), err)
}

var discardLogger = slog.New(slog.DiscardHandler)

package gateway

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// ConnLimits bound the connections the daemon holds, so that clients
// without the token cannot use up its file descriptors: every
// connection counts against Max, and the ones that have not yet shown
// the token or a panel login in a request (unauthenticated) against a
// much smaller Unauthenticated, where the newest pushes out the oldest,
// and they get only UnauthenticatedIdle to send a request. A connection
// is authenticated from its first request that passes the check
// (Server.require, POST /api/login) until it closes.
type ConnLimits struct {
	// Max bounds all connections; at the bound the daemon stops
	// accepting until one closes. 0: from the process's descriptor
	// limit (RLIMIT_NOFILE), less a reserve for the store, the logs,
	// subagents' and MCP servers' processes (defaultMaxConns).
	Max int
	// Unauthenticated bounds the unauthenticated connections: at the
	// bound, a new connection closes the oldest unauthenticated one. So
	// a flood of idle connections holds at most this many descriptors,
	// and the owner's next connection, which authenticates with its
	// first request, still gets through. 0: a quarter of Max, from 16
	// to 1024. Always below Max.
	Unauthenticated int
	// UnauthenticatedIdle is how long an unauthenticated connection may
	// wait for a request (its first, or its next after a public one or
	// a refusal) before it is closed. 0: 5 s.
	UnauthenticatedIdle time.Duration
}

// DefaultUnauthenticatedIdle is ConnLimits.UnauthenticatedIdle's default.
const DefaultUnauthenticatedIdle = 5 * time.Second

// withDefaults fills the zero fields and keeps Unauthenticated below Max.
func (l ConnLimits) withDefaults() ConnLimits {
	if l.Max <= 0 {
		l.Max = defaultMaxConns()
	}
	l.Max = max(l.Max, 2)
	if l.Unauthenticated <= 0 {
		l.Unauthenticated = min(max(l.Max/4, 16), 1024)
	}
	l.Unauthenticated = min(l.Unauthenticated, l.Max-1)
	if l.UnauthenticatedIdle <= 0 {
		l.UnauthenticatedIdle = DefaultUnauthenticatedIdle
	}
	return l
}

// maxConnsCap bounds the default Max whatever the descriptor limit: more
// connections than this are no daemon's normal load.
const maxConnsCap = 1 << 16

// maxConnsFrom is the default Max for a descriptor limit of nofile: a
// quarter of it (at least 256) is kept for the rest of the process.
func maxConnsFrom(nofile uint64) int {
	if nofile == 0 { // unknown
		return 1024
	}
	reserve := max(nofile/4, 256)
	if nofile < reserve+64 {
		return 64
	}
	return int(min(nofile-reserve, maxConnsCap))
}

// connLimiter applies ConnLimits to the connections of the listeners it
// wraps. It owns no goroutine: an idle unauthenticated connection is
// closed by a timer (time.AfterFunc), stopped when the connection works
// or closes.
type connLimiter struct {
	limits  ConnLimits
	metrics *Metrics
	// slots holds one value per open connection.
	slots chan struct{}

	mu sync.Mutex
	// unauth are the unauthenticated connections, oldest first.
	unauth list.List
}

func newConnLimiter(l ConnLimits, m *Metrics) *connLimiter {
	l = l.withDefaults()
	return &connLimiter{limits: l, metrics: m, slots: make(chan struct{}, l.Max)}
}

// listen wraps ln: Accept waits for a free slot, and each connection
// it returns is tracked until it closes.
func (cl *connLimiter) listen(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, cl: cl, done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	cl        *connLimiter
	done      chan struct{}
	closeOnce sync.Once
}

// Accept waits until a connection may be held, then accepts one.
func (ll *limitListener) Accept() (net.Conn, error) {
	select {
	case ll.cl.slots <- struct{}{}:
	case <-ll.done:
		return nil, net.ErrClosed
	}
	c, err := ll.Listener.Accept()
	if err != nil {
		<-ll.cl.slots
		return nil, err
	}
	return ll.cl.track(c), nil
}

// Close stops accepting; an Accept waiting for a slot returns.
func (ll *limitListener) Close() error {
	ll.closeOnce.Do(func() { close(ll.done) })
	return ll.Listener.Close()
}

// limitedConn is a connection the limiter tracks.
type limitedConn struct {
	net.Conn
	cl        *connLimiter
	closeOnce sync.Once

	// Guarded by cl.mu:
	elem   *list.Element // in cl.unauth while unauthenticated, else nil
	active bool          // a request is being handled
	timer  *time.Timer   // closes it when idle and unauthenticated
}

// track records a new connection as unauthenticated, pushing out the
// oldest unauthenticated one when there are as many as allowed, and
// gives it UnauthenticatedIdle for its first request.
func (cl *connLimiter) track(c net.Conn) *limitedConn {
	lc := &limitedConn{Conn: c, cl: cl}
	cl.mu.Lock()
	var evicted *limitedConn
	if cl.unauth.Len() >= cl.limits.Unauthenticated {
		evicted = cl.unauth.Remove(cl.unauth.Front()).(*limitedConn)
		evicted.elem = nil
		evicted.stopTimer()
	}
	lc.elem = cl.unauth.PushBack(lc)
	lc.armTimer()
	cl.mu.Unlock()
	if evicted != nil {
		cl.closed("unauthenticated_evicted")
		evicted.Close()
	}
	return lc
}

// armTimer starts the idle timer of an unauthenticated connection;
// cl.mu is held.
func (lc *limitedConn) armTimer() {
	lc.stopTimer()
	lc.timer = time.AfterFunc(lc.cl.limits.UnauthenticatedIdle, lc.idleTooLong)
}

// stopTimer stops the idle timer; cl.mu is held.
func (lc *limitedConn) stopTimer() {
	if lc.timer != nil {
		lc.timer.Stop()
		lc.timer = nil
	}
}

// idleTooLong closes the connection if it is still unauthenticated and
// waiting for a request.
func (lc *limitedConn) idleTooLong() {
	lc.cl.mu.Lock()
	shut := lc.elem != nil && !lc.active
	lc.cl.mu.Unlock()
	if shut {
		lc.cl.closed("unauthenticated_idle")
		lc.Close()
	}
}

// Close closes the connection and frees its slot, once.
func (lc *limitedConn) Close() error {
	err := lc.Conn.Close()
	lc.closeOnce.Do(func() {
		lc.cl.mu.Lock()
		if lc.elem != nil {
			lc.cl.unauth.Remove(lc.elem)
			lc.elem = nil
		}
		lc.stopTimer()
		lc.cl.mu.Unlock()
		<-lc.cl.slots
	})
	return err
}

// state follows the connection's HTTP state (http.Server.ConnState): a
// request being handled stops the idle timer, an unauthenticated
// connection back to idle gets it again.
func (cl *connLimiter) state(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch st {
	case http.StateActive:
		lc.active = true
		lc.stopTimer()
	case http.StateIdle:
		lc.active = false
		if lc.elem != nil {
			lc.armTimer()
		}
	case http.StateHijacked, http.StateClosed:
		lc.active = false
		lc.stopTimer()
	}
}

// authenticate moves the connection out of the unauthenticated ones:
// from now on only Max and the server's own timeouts apply to it.
func (lc *limitedConn) authenticate() {
	lc.cl.mu.Lock()
	defer lc.cl.mu.Unlock()
	if lc.elem != nil {
		lc.cl.unauth.Remove(lc.elem)
		lc.elem = nil
		lc.stopTimer()
	}
}

// closed counts a connection the limiter closed.
func (cl *connLimiter) closed(reason string) {
	if cl.metrics != nil {
		cl.metrics.connsClosed.WithLabelValues(reason).Inc()
	}
}

type connKey struct{}

// withConn keeps the connection in its requests' contexts
// (http.Server.ConnContext), for authenticated.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// authenticated marks the connection of the request whose context this
// is as authenticated (see ConnLimits); a connection the limiter does
// not track is left alone.
func authenticated(ctx context.Context) {
	if lc, ok := ctx.Value(connKey{}).(*limitedConn); ok {
		lc.authenticate()
	}
}

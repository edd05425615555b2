package gateway

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts bound how long a connection may hold the daemon without
// sending anything. There is no write timeout: event streams, a long
// POST /api/chat answer and MCP's streamable HTTP write for as long as a
// turn runs, and a stream's heartbeat shows whether the client is still
// there.
type Timeouts struct {
	// ReadHeader bounds the reading of a request's headers, from the
	// moment the connection (or the next request on it) starts
	// (http.Server.ReadHeaderTimeout).
	ReadHeader time.Duration
	// Body bounds the reading of a request's body, from the end of its
	// headers until the body's end. It is a read deadline on the
	// connection, set only for a request with a body and lifted once the
	// body is read, so a long answer is never cut by it (unlike
	// http.Server.ReadTimeout, which would also end event streams).
	Body time.Duration
	// Idle is how long a kept-alive connection may wait for its next
	// request (http.Server.IdleTimeout).
	Idle time.Duration
}

// DefaultTimeouts are the daemon's timeouts: 10 s for headers, 30 s for
// a body (a 1 MiB body at 35 KB/s), 30 s idle between requests.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Body: 30 * time.Second, Idle: 30 * time.Second}

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MiB).
const maxHeaderBytes = 64 << 10

// withDefaults fills the zero fields from DefaultTimeouts.
func (t Timeouts) withDefaults() Timeouts {
	if t.ReadHeader <= 0 {
		t.ReadHeader = DefaultTimeouts.ReadHeader
	}
	if t.Body <= 0 {
		t.Body = DefaultTimeouts.Body
	}
	if t.Idle <= 0 {
		t.Idle = DefaultTimeouts.Idle
	}
	return t
}

// HTTPServer returns an http.Server for the server's handler with its
// timeouts and the hooks of its connection limits; serve it on a
// listener wrapped by Listener (http.Server.Serve).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s.handler, ReadHeaderTimeout: s.opt.Timeouts.ReadHeader, IdleTimeout: s.opt.Timeouts.Idle,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState: s.conns.state, ConnContext: withConn}
}

// Listener wraps ln with the server's connection limits (Options.Conns):
// serve HTTPServer on what it returns.
func (s *Server) Listener(ln net.Listener) net.Listener { return s.conns.listen(ln) }

// bodyDeadline sets the connection's read deadline for a request that
// has a body, and lifts it when the body has been read to its end. A
// body that does not arrive in time fails the handler's read (408), and
// the connection is closed: a slow body cannot hold it.
func bodyDeadline(limit time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(limit)); err == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the connection's read deadline once the body is
// read to its end, so the server's watch for a closed connection (which
// cancels a long answer's context) does not run into it.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// isTimeout reports a read that ran into a deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

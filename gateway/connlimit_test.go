package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway"
)

// openCounter counts the server's open connections.
type openCounter struct {
	net.Listener
	open atomic.Int64
}

func (l *openCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	return &openConn{Conn: c, l: l}, nil
}

type openConn struct {
	net.Conn
	l    *openCounter
	once sync.Once
}

func (c *openConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// TestUnauthenticatedConnectionsAreCapped: the attack of issue 38 item
// 6. A flood of idle connections without the token holds at most
// ConnLimits.Unauthenticated of the server's descriptors (the newest push
// out the oldest), and the owner's request still answers at once; an
// unauthenticated connection is closed after UnauthenticatedIdle whether
// it sent nothing or one public request, and at once after a 401; an
// authenticated kept-alive connection keeps the server's idle timeout.
func TestUnauthenticatedConnectionsAreCapped(t *testing.T) {
	var counter *openCounter
	limits := gateway.ConnLimits{Max: 400, Unauthenticated: 8, UnauthenticatedIdle: 400 * time.Millisecond}
	e := newEnv(t, envOptions{conns: limits, listen: func(ln net.Listener) net.Listener {
		counter = &openCounter{Listener: ln}
		return counter
	}})
	addr := e.ts.Listener.Addr().String()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		must(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	waitOpen := func(what string, max int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); counter.open.Load() > max; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the server holds %d connections, want at most %d", what, counter.open.Load(), max)
			}
		}
	}

	for range 300 {
		dial() // sends nothing, keeps it open
	}
	waitOpen("300 idle connections without the token", int64(limits.Unauthenticated))
	start := time.Now()
	if _, err := e.c.Sessions(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the owner's request took %s behind the flood", d)
	}

	// The flood's last ones close after UnauthenticatedIdle, long
	// before the header timeout (10 s).
	waitOpen("idle unauthenticated connections", 1) // the client's own, kept alive with the token

	// One public request, then idle: closed after UnauthenticatedIdle,
	// not the server's idle timeout (30 s).
	public := dial()
	resp := roundTrip(t, public, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	closedWithin(t, "an unauthenticated kept-alive connection", public, 3*time.Second)

	// A refusal closes the connection at once.
	refused := dial()
	resp = roundTrip(t, refused, "GET /api/sessions HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("without the token: %d, close %v; want 401 and the connection closed", resp.StatusCode, resp.Close)
	}
	closedWithin(t, "a refused connection", refused, time.Second)

	// With the token the connection is the owner's: it outlives
	// UnauthenticatedIdle, and a flood does not push it out.
	owner := dial()
	req := "GET /api/sessions HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + e.token + "\r\n\r\n"
	if resp := roundTrip(t, owner, req); resp.StatusCode != 200 {
		t.Fatalf("with the token: %d", resp.StatusCode)
	}
	for range 50 {
		dial()
	}
	time.Sleep(3 * limits.UnauthenticatedIdle)
	if resp := roundTrip(t, owner, req); resp.StatusCode != 200 {
		t.Fatalf("the owner's kept-alive connection after a flood: %d", resp.StatusCode)
	}
	body := scrape(t, e)
	for _, reason := range []string{"unauthenticated_evicted", "unauthenticated_idle"} {
		if !strings.Contains(body, `ava_http_connections_closed_total{reason="`+reason+`"}`) {
			t.Errorf("metrics lack the connections closed as %s", reason)
		}
	}
}

// roundTrip writes a raw request on conn and reads its answer.
func roundTrip(t *testing.T, conn net.Conn, req string) *http.Response {
	t.Helper()
	must(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err := io.WriteString(conn, req)
	must(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	must(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	must(t, conn.SetDeadline(time.Time{}))
	return resp
}

// closedWithin fails unless the server closes conn within max.
func closedWithin(t *testing.T, name string, conn net.Conn, max time.Duration) {
	t.Helper()
	start := time.Now()
	must(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.Copy(io.Discard, conn)
	if err != nil || time.Since(start) > max {
		t.Fatalf("%s: open for %s (%v), want closed within %s", name, time.Since(start), err, max)
	}
}

// scrape reads the server's metrics.
func scrape(t *testing.T, e *env) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", e.ts.URL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(e.authorize(req))
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

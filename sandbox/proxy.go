package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvEgressAllow names the setting with the egress proxy's domain
// allow-list (domains, each also allowing its subdomains; empty allows
// every public host), for messages; package config reads it.
const EnvEgressAllow = "AVA_EGRESS_ALLOW"

// ErrEgressRefused is wrapped by the proxy's refusals.
var ErrEgressRefused = errors.New("egress refused")

// Proxy is the egress proxy of sandboxes with network: an HTTP proxy
// (CONNECT tunnels for HTTPS and anything else over TCP, absolute-URL
// requests for plain HTTP) that reaches a host only if it is on the
// allow-list (when there is one) and only at addresses Guard accepts, the
// same public-address guard as the web tools, checked on every address
// actually dialled. Each connection carries one request.
type Proxy struct {
	// Guard refuses an address the proxy may not dial; required.
	Guard func(netip.Addr) error
	// Allow is the domain allow-list; empty allows every host.
	Allow []string
	// DialTimeout bounds each connection attempt (default 15 s).
	DialTimeout time.Duration
	// Log receives one line per refusal; nil discards.
	Log *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// AllowList normalizes an allow-list's domains: lower case, without
// surrounding spaces and dots, empty ones left out.
func AllowList(domains []string) []string {
	var out []string
	for _, d := range domains {
		d = strings.Trim(strings.ToLower(strings.TrimSpace(d)), ".")
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Serve answers connections from ln until ln is closed or Close is
// called; it returns when every connection it started has ended.
func (p *Proxy) Serve(ln net.Listener) error {
	defer p.wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("egress proxy: accept: %w", err)
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		p.wg.Go(func() {
			defer p.untrack(c)
			p.handle(c)
		})
	}
}

// Close ends every connection in progress. The listener is the caller's
// to close.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		p.tunnel(c, br, req)
		return
	}
	p.forward(c, req)
}

// tunnel answers CONNECT host:port with a spliced connection.
func (p *Proxy) tunnel(c net.Conn, br *bufio.Reader, req *http.Request) {
	up, err := p.dial(req.Context(), req.Host)
	if err != nil {
		p.refuse(c, req.Host, err)
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after the request line belong to the tunnel.
	if n := br.Buffered(); n > 0 {
		buf, _ := br.Peek(n)
		if _, err := up.Write(buf); err != nil {
			return
		}
	}
	splice(c, up)
}

// forward sends one plain-HTTP request in absolute form upstream.
func (p *Proxy) forward(c net.Conn, req *http.Request) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		p.refuse(c, req.URL.String(), fmt.Errorf("%w: only CONNECT and absolute http:// requests are proxied", ErrEgressRefused))
		return
	}
	host := req.URL.Host
	if req.URL.Port() == "" {
		host = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	up, err := p.dial(req.Context(), host)
	if err != nil {
		p.refuse(c, host, err)
		return
	}
	defer up.Close()
	req.RequestURI = ""
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
}

// dial connects to hostport if the allow-list and the guard let it.
func (p *Proxy) dial(ctx context.Context, hostport string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("%w: bad address %q: %w", ErrEgressRefused, hostport, err)
	}
	if !p.allowed(host) {
		return nil, fmt.Errorf("%w: %s is not in %s", ErrEgressRefused, host, EnvEgressAllow)
	}
	timeout := p.DialTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	d := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: parse dial address %q: %w", ErrEgressRefused, address, err)
		}
		if p.Guard == nil {
			return fmt.Errorf("%w: no address guard configured", ErrEgressRefused)
		}
		if err := p.Guard(ap.Addr()); err != nil {
			return fmt.Errorf("%w: %w", ErrEgressRefused, err)
		}
		return nil
	}}
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// allowed applies the domain allow-list: a literal address passes only
// with no list.
func (p *Proxy) allowed(host string) bool {
	if len(p.Allow) == 0 {
		return true
	}
	host = strings.Trim(strings.ToLower(host), ".")
	for _, d := range p.Allow {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

func (p *Proxy) refuse(c net.Conn, target string, err error) {
	if p.Log != nil {
		p.Log.Info("egress refused", "target", target, "err", err)
	}
	msg := err.Error() + "\n"
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
}

// splice copies both ways until either side ends.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

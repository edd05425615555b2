package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// guard applies the safety rules to every request: Host, token, and for
// state-changing methods Origin and content type.
type guard struct {
	// hosts are the host names a request's Host may name; empty
	// allows any (a wildcard bind, which requires a token).
	hosts []string
	// tokenSum is the SHA-256 of the token (nil: none required), so
	// the constant-time compare does not leak the token's length.
	tokenSum []byte
	// public reports the paths a GET may fetch without the token (the
	// web panel's static files, which hold no data); nil: none.
	public func(path string) bool
}

func newGuard(addr, token string, extra []string) (guard, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return guard{}, fmt.Errorf("gateway address %q: %w", addr, err)
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	g := guard{}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		g.tokenSum = sum[:]
	}
	if !isLoopback(host) && token == "" {
		return guard{}, fmt.Errorf("%w (%s); set AVA_TOKEN, or bind 127.0.0.1", ErrTokenRequired, addr)
	}
	ip := net.ParseIP(host)
	if host == "" || (ip != nil && ip.IsUnspecified()) {
		return g, nil // any interface: the token is the gate
	}
	g.hosts = append([]string{host, "localhost", "127.0.0.1", "::1"}, extra...)
	return g, nil
}

func (g guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("host %q is not this daemon's address (DNS rebinding protection)", r.Host))
			return
		}
		if !g.open(r) && !g.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ava"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token (AVA_TOKEN)")
			return
		}
		if changesState(r.Method) {
			if msg := g.crossSite(r); msg != "" {
				writeError(w, http.StatusForbidden, msg)
				return
			}
			if msg := notJSON(r); msg != "" && !bodiless(r) {
				writeError(w, http.StatusUnsupportedMediaType, msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// open reports whether r needs no token: /healthz, /readyz, and GETs of the web
// panel's files.
func (g guard) open(r *http.Request) bool {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return true
	}
	return g.public != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) && g.public(r.URL.Path)
}

func changesState(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// hostAllowed checks the Host header's name (any port).
func (g guard) hostAllowed(hostport string) bool {
	if len(g.hosts) == 0 {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	return slices.Contains(g.hosts, host)
}

// authorized checks the bearer token, in constant time.
func (g guard) authorized(r *http.Request) bool {
	if g.tokenSum == nil {
		return true
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") { // the scheme is case-insensitive (RFC 7235)
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], g.tokenSum) == 1
}

// crossSite explains why a state-changing request from another site is
// refused, or returns "". A request with no Origin (a command-line
// client) is not a browser's cross-site request.
func (g guard) crossSite(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "cross-site request refused"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) || !g.hostAllowed(u.Host) {
		return fmt.Sprintf("origin %q is not this daemon's own (cross-origin request refused)", origin)
	}
	return ""
}

// bodiless reports a DELETE /mcp without a body (the end of an MCP
// session), which has no content type to check.
func bodiless(r *http.Request) bool {
	return r.Method == http.MethodDelete && r.URL.Path == "/mcp" && r.ContentLength == 0
}

// notJSON explains why a body that is not JSON is refused, or returns "".
// Requiring application/json also keeps browsers from sending a
// cross-site form without a preflight.
func notJSON(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return "the body must be JSON (Content-Type: application/json)"
	}
	return ""
}

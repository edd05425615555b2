package gateway

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// guard applies the rules every request passes before routing: its
// Host must name this daemon (DNS rebinding). The token and, for
// state-changing methods, the Origin and content-type rules are checked
// per route (Server.require), after the router chose the route.
type guard struct {
	// hosts are the host names a request's Host may name; empty
	// allows any (a wildcard bind, which requires AVA_TOKEN).
	hosts []string
}

// newGuard checks the address and token rule: an address that is not
// loopback needs an explicit token (AVA_TOKEN).
func newGuard(addr, token string, extra []string) (guard, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return guard{}, fmt.Errorf("gateway address %q: %w", addr, err)
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if !isLoopback(host) && token == "" {
		return guard{}, fmt.Errorf("%w (%s); set AVA_TOKEN, or bind 127.0.0.1", ErrTokenRequired, addr)
	}
	ip := net.ParseIP(host)
	if host == "" || (ip != nil && ip.IsUnspecified()) {
		return guard{}, nil // any interface: the token is the gate
	}
	return guard{hosts: append([]string{host, "localhost", "127.0.0.1", "::1"}, extra...)}, nil
}

func (g guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("host %q is not this daemon's address (DNS rebinding protection)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
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

// bodiless reports a request without a body to a DELETE route (the end
// of an MCP session, a revoked login), which has no content type to
// check; a DELETE that no route takes still meets the JSON rule. A
// browser never sends a DELETE across sites without a CORS preflight,
// which the daemon does not answer, and crossSite has checked its Origin.
func bodiless(r *http.Request) bool {
	return r.Method == http.MethodDelete && r.ContentLength == 0 && strings.HasPrefix(r.Pattern, http.MethodDelete+" ")
}

// notJSON explains why a body that is not JSON is refused, or returns "".
// Requiring application/json also keeps browsers from sending a
// cross-site form without a preflight.
//
// The one exception is the upload of attachments (POST
// /api/attachments), which takes multipart/form-data, files being
// files: a form another site's page posts there is still refused by
// crossSite (a browser sends Origin on every cross-origin POST, and
// Sec-Fetch-Site), and it could only store files, never send them.
func notJSON(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && mt == "multipart/form-data" && r.Pattern == uploadPattern {
		return ""
	}
	if err != nil || mt != "application/json" {
		return "the body must be JSON (Content-Type: application/json)"
	}
	return ""
}

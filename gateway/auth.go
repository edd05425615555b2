package gateway

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Authentication. Every route needs the daemon's token but the public
// ones, which are named one by one where the routes are registered
// (router.public) and matched by the router itself, so no path trick
// can reach a handler that did not check. A request proves it holds the
// token in one of two ways:
//
//   - an Authorization: Bearer header with the token (the command line,
//     scripts, MCP clients);
//   - a session cookie (the web panel), which a browser gets by opening
//     a one-time login link (GET /?login=CODE, printed by ava serve and
//     ava panel) or by posting the token once to POST /api/login. The
//     cookie is HttpOnly, SameSite=Strict, Path=/, named after the
//     daemon's port, and signed with a key derived from the token, so it
//     holds in every daemon on the same token and dies with the token.

// LoginCodeTTL is how long a one-time login link stays valid unused.
const LoginCodeTTL = 15 * time.Minute

// SessionLifetime is how long a browser's session cookie is valid.
const SessionLifetime = 7 * 24 * time.Hour

// auth checks a request's credentials and issues login codes and
// session cookies.
type auth struct {
	// tokenSum is the SHA-256 of the token, so that the constant-time
	// compare does not leak the token's length.
	tokenSum []byte
	// cookieKey signs session cookies (HMAC-SHA256), derived from the
	// token.
	cookieKey []byte
	// cookieName is the session cookie's name. Browsers send a host's
	// cookies to all its ports, so it names the port: two daemons on one
	// host keep one cookie each.
	cookieName string
	now        func() time.Time

	mu    sync.Mutex
	codes map[[sha256.Size]byte]time.Time // unused login codes (by hash) → expiry
}

// errNoToken is returned by New without Options.Token.
var errNoToken = errors.New("gateway: a token is required (Options.Token): every route but /healthz and /readyz needs it")

func newAuth(token, addr string) (*auth, error) {
	if token == "" {
		return nil, errNoToken
	}
	sum := sha256.Sum256([]byte(token))
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("ava session cookie v1"))
	_, port, _ := net.SplitHostPort(addr)
	return &auth{tokenSum: sum[:], cookieKey: mac.Sum(nil), cookieName: "ava_session_" + cleanPort(port),
		now: time.Now, codes: map[[sha256.Size]byte]time.Time{}}, nil
}

// cleanPort keeps a port's digits for the cookie's name.
func cleanPort(port string) string {
	if _, err := strconv.Atoi(port); err != nil || port == "" {
		return "0"
	}
	return port
}

// allowed reports whether r carries the token or a valid session
// cookie.
func (a *auth) allowed(r *http.Request) bool {
	return a.bearer(r) || a.session(r)
}

// bearer checks the Authorization header, in constant time.
func (a *auth) bearer(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") { // the scheme is case-insensitive (RFC 7235)
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum) == 1
}

// session checks the session cookie: its signature and its expiry.
func (a *auth) session(r *http.Request) bool {
	c, err := r.Cookie(a.cookieName)
	if err != nil {
		return false
	}
	nonce, rest, ok1 := strings.Cut(c.Value, ".")
	exp, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, a.sign(nonce+"."+exp)) {
		return false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	return err == nil && a.now().Before(time.Unix(unix, 0))
}

func (a *auth) sign(s string) []byte {
	mac := hmac.New(sha256.New, a.cookieKey)
	mac.Write([]byte(s))
	return mac.Sum(nil)
}

// sessionCookie is a new signed session cookie.
func (a *auth) sessionCookie() (*http.Cookie, error) {
	nonce, err := randomString(16)
	if err != nil {
		return nil, err
	}
	exp := strconv.FormatInt(a.now().Add(SessionLifetime).Unix(), 10)
	value := nonce + "." + exp + "." + hex.EncodeToString(a.sign(nonce+"."+exp))
	return &http.Cookie{Name: a.cookieName, Value: value, Path: "/", MaxAge: int(SessionLifetime / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode}, nil
}

// issueCode returns a new one-time login code, valid for LoginCodeTTL.
func (a *auth) issueCode() (string, error) {
	code, err := randomString(24)
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for k, exp := range a.codes { // forget the expired ones
		if !now.Before(exp) {
			delete(a.codes, k)
		}
	}
	a.codes[sha256.Sum256([]byte(code))] = now.Add(LoginCodeTTL)
	return code, nil
}

// redeem spends a login code: true once for a code issued and not
// expired, false ever after.
func (a *auth) redeem(code string) bool {
	k := sha256.Sum256([]byte(code))
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.codes[k]
	delete(a.codes, k)
	return ok && a.now().Before(exp)
}

func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("draw a random value: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// require is the gate of every route that is not public: the token or
// a session cookie, then, for a state-changing method, the cross-site
// and content-type rules.
func (s *Server) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.auth.allowed(r) {
			if r.ContentLength != 0 {
				// Its body is never read: close the connection after the
				// answer rather than read the rest of it (net/http would
				// read up to 256 KiB, for as long as the body timeout).
				w.Header().Set("Connection", "close")
				_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="ava"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong token: send the daemon's token as a bearer token "+
				"(AVA_TOKEN, or the data root's "+tokenFileHint+"), or log the browser in with the link ava serve printed")
			return
		}
		if changesState(r.Method) {
			if msg := s.guard.crossSite(r); msg != "" {
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

// tokenFileHint names the token file in messages.
const tokenFileHint = "daemon.token"

// router registers routes: each one behind require unless registered
// with public or asset, so a route is private by default. It records
// the API's patterns (Server.Routes), which the OpenAPI document must
// match (openapi.go).
type router struct {
	mux     *http.ServeMux
	require func(http.Handler) http.Handler
	// publics are the public patterns, for tests and docs.
	publics []string
	// routes are the API's patterns, in the order registered: every
	// pattern but the panel's files and the method-less catch-all.
	routes []string
}

// handle registers a route that needs the token or a session.
func (rt *router) handle(pattern string, h http.Handler) {
	rt.record(pattern)
	rt.mux.Handle(pattern, rt.require(h))
}

// handleFunc is handle for a function.
func (rt *router) handleFunc(pattern string, h http.HandlerFunc) { rt.handle(pattern, h) }

// public registers a route anyone may call: only GETs of what holds no
// data (health, readiness, the API's description, the panel's page).
func (rt *router) public(pattern string, h http.Handler) {
	rt.record(pattern)
	rt.publics = append(rt.publics, pattern)
	rt.mux.Handle(pattern, h)
}

// asset registers one of the web panel's static files: public, and not
// a route of the API (the panel's page, GET /, is).
func (rt *router) asset(pattern string, h http.Handler) {
	rt.publics = append(rt.publics, pattern)
	rt.mux.Handle(pattern, h)
}

// record notes an API route; a pattern without a method (the catch-all
// that answers 404) is none.
func (rt *router) record(pattern string) {
	if strings.Contains(pattern, " ") {
		rt.routes = append(rt.routes, pattern)
	}
}

// LoginLink returns a one-time link that logs a browser in to the web
// panel: opening it sets the session cookie, once; it expires unused
// after LoginCodeTTL.
func (s *Server) LoginLink() (string, error) {
	code, err := s.auth.issueCode()
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(s.opt.Addr)
	if err != nil {
		return "", fmt.Errorf("login link for %q: %w", s.opt.Addr, err)
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/?login=" + code, nil
}

// index answers GET /: with ?login=CODE it spends the code, sets the
// session cookie and sends the browser on to / (so the code leaves the
// address bar and the history); else it serves the panel's page.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	if !r.URL.Query().Has("login") {
		s.panel.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !s.auth.redeem(r.URL.Query().Get("login")) {
		writeError(w, http.StatusUnauthorized, "this login link was already used or has expired: run ava panel for a new one, "+
			"or open the panel and enter the token (the data root's "+tokenFileHint+", or AVA_TOKEN)")
		return
	}
	s.setSession(w)
}

// setSession sets a new session cookie and sends the browser to /.
func (s *Server) setSession(w http.ResponseWriter) {
	c, err := s.auth.sessionCookie()
	if err != nil {
		fail(w, err)
		return
	}
	http.SetCookie(w, c)
	w.Header().Set("Location", "/")
	w.WriteHeader(http.StatusSeeOther)
}

// login answers POST /api/login (with the bearer token, which the panel
// asks the person for): it sets the session cookie, so the panel never
// keeps the token itself.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	c, err := s.auth.sessionCookie()
	if err != nil {
		fail(w, err)
		return
	}
	http.SetCookie(w, c)
	writeJSON(w, http.StatusOK, map[string]bool{"loggedIn": true})
}

// loginLink answers POST /api/login/link: a new one-time link for a
// browser (ava panel).
func (s *Server) loginLink(w http.ResponseWriter, r *http.Request) {
	link, err := s.LoginLink()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"link": link})
}

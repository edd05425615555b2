package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// Authentication. Every route needs the daemon's token but the public
// ones, which are named one by one where the routes are registered
// (router.public) and matched by the router itself, so no path trick
// can reach a handler that did not check. A request proves it holds the
// token in one of two ways:
//
//   - an Authorization: Bearer header with the token (the command line,
//     scripts, MCP clients);
//   - a web panel login: the session cookie AND the login's second
//     secret in the X-Ava-Login header (client.LoginHeader). A browser
//     logs in by trading a one-time code (the link ava serve and ava
//     panel print, http://ADDR/#login=CODE) or the token for both at
//     POST /api/login. The cookie is HttpOnly, SameSite=Strict, Path=/,
//     named after the daemon's port, and lasts as long as the browser
//     session; the secret lives in the tab's sessionStorage, which only
//     the daemon's own origin can read. Browsers send a host's cookies
//     to all its ports, so the cookie alone (replayed by a page of
//     another port, or by curl) opens nothing.
//
// A login lives in the store (ava.LoginStore), so every process sharing
// the data root or the cluster's database knows it and sees it revoked;
// the store keeps only keyed hashes of the cookie and the secret, under
// a key derived from the token, so a new token voids every login. A
// login ends SessionLifetime after its last use, and at the latest
// SessionMaxAge after it began; logout (POST /api/logout) and DELETE
// /api/logins[/{id}] revoke logins at once, and an open event stream of
// a revoked login ends at its next heartbeat.

// LoginCodeTTL is how long a one-time login link stays valid unused.
const LoginCodeTTL = 15 * time.Minute

// SessionLifetime is how long a web panel login lasts without being
// used: each use moves its end this far ahead (at most once every
// renewEvery), up to SessionMaxAge after the login.
const SessionLifetime = 12 * time.Hour

// SessionMaxAge is the longest a web panel login lasts, however much it
// is used: then the browser logs in again.
const SessionMaxAge = 7 * 24 * time.Hour

// renewEvery is how stale a login's expiry may grow before a use writes
// a new one: a busy panel renews a few times an hour, not on every call.
const renewEvery = 5 * time.Minute

// renewTimeout bounds the write that renews a login.
const renewTimeout = 5 * time.Second

// auth checks a request's credentials, issues login codes and creates,
// renews and revokes web panel logins.
type auth struct {
	// tokenSum is the SHA-256 of the token, so that the constant-time
	// compare does not leak the token's length.
	tokenSum []byte
	// key is the HMAC-SHA256 key under which the store keeps a login's
	// cookie and secret, derived from the token.
	key []byte
	// cookieName is the session cookie's name. Browsers send a host's
	// cookies to all its ports, so it names the port: two daemons on one
	// host keep one cookie each.
	cookieName string
	logins     ava.LoginStore
	log        *slog.Logger
	now        func() time.Time

	mu    sync.Mutex
	codes map[[sha256.Size]byte]time.Time // unused login codes (by hash) → expiry
}

// errNoToken is returned by New without Options.Token.
var errNoToken = errors.New("gateway: a token is required (Options.Token): every route but /healthz and /readyz needs it")

func newAuth(token, addr string, logins ava.LoginStore, log *slog.Logger) (*auth, error) {
	if token == "" {
		return nil, errNoToken
	}
	if logins == nil {
		return nil, errors.New("gateway: a store of web panel logins is required")
	}
	sum := sha256.Sum256([]byte(token))
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("ava panel login v2"))
	_, port, _ := net.SplitHostPort(addr)
	return &auth{tokenSum: sum[:], key: mac.Sum(nil), cookieName: "ava_session_" + cleanPort(port),
		logins: logins, log: log, now: time.Now, codes: map[[sha256.Size]byte]time.Time{}}, nil
}

// cleanPort keeps a port's digits for the cookie's name.
func cleanPort(port string) string {
	if _, err := strconv.Atoi(port); err != nil || port == "" {
		return "0"
	}
	return port
}

// caller is who a request proved to be.
type caller struct {
	// bearer is set for the token.
	bearer bool
	// login is the web panel login the request came with (nil with the
	// token).
	login *ava.Login
}

type callerKey struct{}

// callerOf is the caller require stored in the request's context.
func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// unauthorized is a request without valid credentials (401); its
// message says which part was missing or wrong.
type unauthorized struct{ msg string }

func (e unauthorized) Error() string { return e.msg }

// Messages of a refused request.
const (
	msgNoCredentials = "missing or wrong token: send the daemon's token as a bearer token " +
		"(AVA_TOKEN, or the data root's " + tokenFileHint + "), or log the browser in with the link ava panel prints"
	msgCookieAlone = "the web panel's session cookie alone is not enough: a call with it must also send the login's secret in the " +
		client.LoginHeader + " header (the panel does; a script sends the daemon's token as a bearer token instead)"
	msgLoginGone = "this web panel login has ended (logged out, revoked, expired, or the daemon's token changed): " +
		"log in again with the link ava panel prints, or with the token"
)

// check returns who r is, an unauthorized error when r proves nothing,
// or another error when the store could not be asked.
func (a *auth) check(r *http.Request) (caller, error) {
	if a.bearer(r) {
		return caller{bearer: true}, nil
	}
	c, err := r.Cookie(a.cookieName)
	if err != nil || c.Value == "" {
		return caller{}, unauthorized{msgNoCredentials}
	}
	secret := r.Header.Get(client.LoginHeader)
	if secret == "" {
		return caller{}, unauthorized{msgCookieAlone}
	}
	l, err := a.logins.LoginByCookie(r.Context(), a.hash("cookie", c.Value))
	if errors.Is(err, ava.ErrNotFound) {
		return caller{}, unauthorized{msgLoginGone}
	}
	if err != nil {
		return caller{}, fmt.Errorf("check the web panel login: %w", err)
	}
	want, err1 := hex.DecodeString(l.SecretHash)
	got, err2 := hex.DecodeString(a.hash("secret", secret))
	if err1 != nil || err2 != nil || subtle.ConstantTimeCompare(got, want) != 1 {
		return caller{}, unauthorized{msgCookieAlone}
	}
	if err := a.use(r.Context(), &l); err != nil {
		return caller{}, err
	}
	return caller{login: &l}, nil
}

// use checks that a login has not expired and moves its expiry forward
// (SessionLifetime from now, up to SessionMaxAge after it began) once
// the stored one is renewEvery old. A login revoked meanwhile is
// unauthorized; a store that fails to renew is logged, not fatal (the
// login is still valid until its stored expiry).
func (a *auth) use(ctx context.Context, l *ava.Login) error {
	now := a.now()
	if !now.Before(l.ExpiresAt) {
		return unauthorized{msgLoginGone}
	}
	until := now.Add(SessionLifetime)
	if limit := l.CreatedAt.Add(SessionMaxAge); until.After(limit) {
		until = limit
	}
	if until.Sub(l.ExpiresAt) < renewEvery {
		return nil
	}
	// The renewal is written even if the caller hangs up meanwhile.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), renewTimeout)
	defer cancel()
	err := a.logins.RenewLogin(wctx, l.ID, until)
	switch {
	case errors.Is(err, ava.ErrNotFound):
		return unauthorized{msgLoginGone}
	case err != nil:
		a.log.Warn("could not renew a web panel login", "login", l.ID, "err", err)
	default:
		l.ExpiresAt = until
	}
	return nil
}

// recheck reports whether the caller of a long request (an event
// stream) may go on: always with the token; with a login, while it is
// neither revoked nor expired (using it renews it, as a call does). A
// store that cannot answer is no reason to cut a stream.
func (a *auth) recheck(ctx context.Context) error {
	c := callerOf(ctx)
	if c.login == nil {
		return nil
	}
	l, err := a.logins.LoginByCookie(ctx, c.login.CookieHash)
	switch {
	case errors.Is(err, ava.ErrNotFound):
		return unauthorized{msgLoginGone}
	case err != nil:
		return nil
	}
	return a.use(ctx, &l)
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

// hash is the keyed hash under which the store keeps a login's cookie
// or secret (kind), in hex.
func (a *auth) hash(kind, value string) string {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(kind))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	return hex.EncodeToString(mac.Sum(nil))
}

// newLogin creates a web panel login for a browser (its User-Agent,
// for lists) and returns the cookie to set and the secret to answer.
func (a *auth) newLogin(ctx context.Context, userAgent string) (*http.Cookie, client.LoginResult, error) {
	for attempt := 0; ; attempt++ {
		cookie, err1 := randomString(32)
		secret, err2 := randomString(32)
		id, err3 := randomHex(6)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, client.LoginResult{}, err
		}
		now := a.now()
		l := ava.Login{ID: "L-" + id, CookieHash: a.hash("cookie", cookie), SecretHash: a.hash("secret", secret),
			UserAgent: userAgent, CreatedAt: now, ExpiresAt: now.Add(SessionLifetime)}
		err := a.logins.CreateLogin(ctx, l)
		if errors.Is(err, ava.ErrDuplicate) && attempt < 3 { // an ID drawn twice
			continue
		}
		if err != nil {
			return nil, client.LoginResult{}, fmt.Errorf("log the browser in: %w", err)
		}
		c := &http.Cookie{Name: a.cookieName, Value: cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode}
		return c, client.LoginResult{LoggedIn: true, ID: l.ID, Secret: secret, ExpiresAt: l.ExpiresAt}, nil
	}
}

// clearCookie is a Set-Cookie that makes the browser drop the session
// cookie.
func (a *auth) clearCookie() *http.Cookie {
	return &http.Cookie{Name: a.cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode}
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

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("draw a random value: %w", err)
	}
	return hex.EncodeToString(b), nil
}

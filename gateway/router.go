package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// require is the gate of every route that is not public: the token or a
// web panel login (see auth.go), then, for a state-changing method, the
// cross-site and content-type rules. The caller it found is in the
// handler's context (callerOf), and the connection counts as
// authenticated from then on (connLimits).
func (s *Server) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.auth.check(r)
		var denied unauthorized
		if errors.As(err, &denied) {
			refuse(w, r, denied.msg)
			return
		}
		if err != nil {
			fail(w, err)
			return
		}
		authenticated(r.Context())
		s.stateRules(next).ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// refuse answers 401 and closes the connection after the answer: a
// client without credentials gets nothing more of it, not even the
// reading of its body (net/http would read up to 256 KiB, for as long as
// the body timeout).
func refuse(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Connection", "close")
	if r.ContentLength != 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ava"`)
	writeError(w, http.StatusUnauthorized, msg)
}

// stateRules refuses a state-changing request from another site, or
// with a body that is not JSON.
func (s *Server) stateRules(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
// with public, asset or credentials, so a route is private by default.
// It records the API's patterns (Server.Routes), which the OpenAPI
// document must match (openapi.go).
type router struct {
	mux     *http.ServeMux
	require func(http.Handler) http.Handler
	// bound gives a route the API's deadline (Server.bounded).
	bound func(http.Handler) http.Handler
	// rules are the cross-site and content-type rules alone, for the
	// route that checks its credentials itself.
	rules func(http.Handler) http.Handler
	// publics are the public patterns, for tests and docs.
	publics []string
	// routes are the API's patterns, in the order registered: every
	// pattern but the panel's files and the method-less catch-all.
	routes []string
}

// handle registers a route that needs the token or a panel login,
// answered within the API's deadline (Server.bounded).
func (rt *router) handle(pattern string, h http.Handler) {
	rt.record(pattern)
	rt.mux.Handle(pattern, rt.bound(rt.require(h)))
}

// stream registers a route that needs the token or a panel login and
// answers with a stream for as long as it lasts (SSE, MCP): not bounded
// as a whole; it bounds its own reads of the store.
func (rt *router) stream(pattern string, h http.Handler) {
	rt.record(pattern)
	rt.mux.Handle(pattern, rt.require(h))
}

// handleFunc is handle for a function.
func (rt *router) handleFunc(pattern string, h http.HandlerFunc) { rt.handle(pattern, h) }

// credentials registers the one route that checks a credential of its
// own (POST /api/login: the token, or a one-time login code in its
// body) and answers 401 without it; the cross-site and content-type
// rules still apply.
func (rt *router) credentials(pattern string, h http.HandlerFunc) {
	rt.record(pattern)
	rt.mux.Handle(pattern, rt.bound(rt.rules(h)))
}

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

package gateway

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of the HTTP API, written by hand
// in openapi.json beside the routes it describes (Server.routes). A
// test keeps the two equal: every route served is documented, every
// route documented is served (TestOpenAPIDescribesTheRoutes).
//
//go:embed openapi.json
var openAPI []byte

// What the embedded document says of one daemon: the default address in
// servers and that port's session cookie. A daemon serves the document
// with its own (openAPIFor).
const (
	docServerURL = `"url": "http://127.0.0.1:7777"`
	docCookie    = `"name": "ava_session_7777"`
)

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API (JSON) as
// written: its servers name the default address (127.0.0.1:7777) and
// its cookie scheme that port's cookie. A daemon serves it at GET
// /api/openapi.json with its own address and cookie name.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// openAPIFor returns the document as a daemon serves it: baseURL in
// servers and cookie as the panel cookie's name. It fails when the
// document no longer holds the default values once each.
func openAPIFor(baseURL, cookie string) ([]byte, error) {
	doc := openAPI
	for _, r := range []struct{ old, key, val string }{{docServerURL, "url", baseURL}, {docCookie, "name", cookie}} {
		if n := bytes.Count(doc, []byte(r.old)); n != 1 {
			return nil, fmt.Errorf("gateway: openapi.json holds %s %d times, want once (the daemon serves its own value)", r.old, n)
		}
		val, err := json.Marshal(r.val)
		if err != nil {
			return nil, fmt.Errorf("gateway: openapi.json %s: %w", r.key, err)
		}
		doc = bytes.Replace(doc, []byte(r.old), []byte(`"`+r.key+`": `+string(val)), 1)
	}
	return doc, nil
}

// openAPIHandler answers GET /api/openapi.json with the document naming
// this daemon: the address it is bound to, or, bound to every interface
// (wildcard, when the guard checks no host), the address the client
// reached; and its session cookie. It needs no token: the document
// holds no data of the daemon, only the routes docs/api.md publishes
// too, so a client generator or an API explorer can read it before it
// has the token.
func (s *Server) openAPIHandler() (http.Handler, error) {
	bound, err := openAPIFor("http://"+s.opt.Addr, s.auth.cookieName)
	if err != nil {
		return nil, err
	}
	wildcard := len(s.guard.hosts) == 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc := bound
		if wildcard && r.Host != "" {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			var err error
			if doc, err = openAPIFor(scheme+"://"+r.Host, s.auth.cookieName); err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(doc)
	}), nil
}

package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway"
	"github.com/avaagent/ava/gateway/client"
)

// route is one request of the route table.
type route struct{ method, path, body string }

// allRoutes is a request to every route of the API, and the path
// tricks: an escaped slash that a cleaned path would take for a panel
// file, dot segments, an unknown path.
var allRoutes = []route{
	{"GET", "/metrics", ""},
	{"POST", "/api/chat", `{"message":"hi"}`},
	{"POST", "/api/chat/stop", `{"sessionKey":"ava:web:x"}`},
	{"GET", "/api/chat/stream?sessionKey=ava:web:x", ""},
	{"GET", "/api/subagents", ""},
	{"POST", "/api/subagents", `{"role":"researcher","task":"t"}`},
	{"GET", "/api/subagents/S-abcdef", ""},
	{"GET", "/api/sessions", ""},
	{"GET", "/api/sessions/ava:web:x", ""},
	{"PATCH", "/api/sessions/ava:web:x", `{"title":"t"}`},
	{"GET", "/api/spawns", ""},
	{"POST", "/api/spawns/P-abcdef/confirm", `{"decision":"yes"}`},
	{"GET", "/api/questions", ""},
	{"POST", "/api/questions/Q-abcdef/answer", `{"answer":"a"}`},
	{"GET", "/api/logs", ""},
	{"GET", "/api/mcp/servers", ""},
	{"POST", "/api/login", `{}`},
	{"POST", "/api/login/link", `{}`},
	{"GET", "/mcp", ""},
	{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	{"DELETE", "/mcp", ""},
	{"GET", "/nosuch", ""},
	{"POST", "/", `{}`},
	{"HEAD", "/api/sessions", ""},
	{"GET", "/api/subagents/..%2F..%2Findex.html", ""},
	{"GET", "/api/subagents/..%2F..%2Fhealthz", ""},
	{"GET", "/api/sessions/..%2F..%2Fapp.js", ""},
	{"GET", "/api/logs/..%2F..%2Findex.html", ""},
	{"GET", "/%2Fapi/sessions", ""},
	{"GET", "/vendor%2Fhtm.mjs", ""},
	{"GET", "/index.html/..%2Fapi/sessions", ""},
	{"GET", "/healthz/", ""},
	{"GET", "/readyz%2F..%2Fapi%2Fsessions", ""},
}

// send sends r with the extra headers and returns the status.
func (e *env) send(r route, hdr http.Header) int {
	e.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, e.ts.URL+r.path, body)
	must(e.t, err)
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header[k] = v
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Do(req.WithContext(ctx))
	must(e.t, err)
	resp.Body.Close() // a stream is cut here: its status is what counts
	return resp.StatusCode
}

// TestEveryRouteNeedsTheToken: without the token or a session every
// route answers 401 (the path tricks too) but /healthz, /readyz, the
// API's OpenAPI document and the panel's files, which are the only
// public routes (none holds data); with the token or a
// session cookie no route answers 401.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, r := range allRoutes {
		if code := e.send(r, nil); code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d, want 401", r.method, r.path, code)
		}
		if code := e.send(r, http.Header{"Authorization": {"Bearer wrong"}}); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d, want 401", r.method, r.path, code)
		}
		if code := e.send(r, http.Header{"Cookie": {"ava_session_1=forged.9999999999.00"}}); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a forged cookie: %d, want 401", r.method, r.path, code)
		}
	}
	for _, p := range []string{"/healthz", "/readyz", "/api/openapi.json", "/", "/index.html", "/app.js", "/vendor/preact.mjs"} {
		if code := e.send(route{"GET", p, ""}, nil); code != http.StatusOK {
			t.Errorf("public GET %s: %d, want 200", p, code)
		}
	}
	cookie := e.sessionCookie()
	for _, r := range allRoutes {
		if r.path == "/api/chat/stream?sessionKey=ava:web:x" || r.method == "POST" && r.path == "/api/chat" {
			continue // would wait for a turn or a stream: checked below
		}
		for name, hdr := range map[string]http.Header{"token": {"Authorization": {"Bearer " + e.token}}, "cookie": {"Cookie": {cookie.String()}}} {
			if code := e.send(r, hdr); code == http.StatusUnauthorized {
				t.Errorf("%s %s with the %s: 401", r.method, r.path, name)
			}
		}
	}
	want := []string{"GET /healthz", "GET /readyz", "GET /{$}", "GET /api/openapi.json"}
	for _, p := range e.srv.PublicRoutes() {
		if !slices.Contains(want, p) && !strings.HasPrefix(p, "GET /") {
			t.Errorf("public route %q: only GETs of health, readiness, the API's description and the panel's files may be public", p)
		}
		if strings.Contains(p, "/api/") && p != "GET /api/openapi.json" || strings.Contains(p, "{") && p != "GET /{$}" || p == "GET /" {
			t.Errorf("public route %q", p)
		}
	}
	if _, err := client.New(e.ts.URL, "").Health(ctx(t)); err != nil {
		t.Fatalf("healthz without a token: %v", err)
	}
	if _, err := client.New(e.ts.URL, "").Sessions(ctx(t)); !client.IsStatus(err, http.StatusUnauthorized) {
		t.Fatalf("sessions without a token: %v, want 401", err)
	}
}

// sessionCookie logs in through a one-time link and returns the
// session cookie it set, checking its attributes.
func (e *env) sessionCookie() *http.Cookie {
	e.t.Helper()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Get(e.loginURL())
	must(e.t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		e.t.Fatalf("login link: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	_, port, _ := net.SplitHostPort(e.ts.Listener.Addr().String())
	if len(cs) != 1 || cs[0].Name != "ava_session_"+port || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode ||
		cs[0].Path != "/" || cs[0].MaxAge <= 0 {
		e.t.Fatalf("login cookie %v (%q), want one HttpOnly SameSite=Strict ava_session_%s at /", cs, resp.Header.Values("Set-Cookie"), port)
	}
	return &http.Cookie{Name: cs[0].Name, Value: cs[0].Value}
}

// TestLoginLinkWorksOnce: a one-time link sets the session cookie once;
// its second use, an unknown code and a cookie of another daemon's
// token are refused; POST /api/login trades the token for a cookie.
func TestLoginLinkWorksOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	link := e.loginURL()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Get(link)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("first use: %d %v", resp.StatusCode, resp.Cookies())
	}
	cookie := resp.Cookies()[0]
	for _, u := range []string{link, e.ts.URL + "/?login=", e.ts.URL + "/?login=nosuchcode"} {
		resp, err := cl.Get(u)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(string(b), "already used or has expired") {
			t.Fatalf("GET %s: %d %v %s, want 401 and no cookie", u, resp.StatusCode, resp.Cookies(), b)
		}
	}
	if code := e.send(route{"GET", "/api/sessions", ""}, http.Header{"Cookie": {(&http.Cookie{Name: cookie.Name, Value: cookie.Value}).String()}}); code != 200 {
		t.Fatalf("GET /api/sessions with the cookie: %d", code)
	}
	// A cookie signed with another token does not open this daemon.
	other := newEnv(t, envOptions{token: "another-token"})
	oc := other.sessionCookie()
	oc.Name = cookie.Name
	if code := e.send(route{"GET", "/api/sessions", ""}, http.Header{"Cookie": {oc.String()}}); code != http.StatusUnauthorized {
		t.Fatalf("another daemon's cookie: %d, want 401", code)
	}
	// The panel's dialog: the token for a cookie.
	req, _ := http.NewRequest("POST", e.ts.URL+"/api/login", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(e.authorize(req))
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 || !resp.Cookies()[0].HttpOnly {
		t.Fatalf("POST /api/login with the token: %d %v", resp.StatusCode, resp.Cookies())
	}
	link, err = e.c.LoginLink(ctx(t))
	if err != nil || !strings.HasPrefix(link, e.ts.URL+"/?login=") {
		t.Fatalf("a new link from the client: %q %v", link, err)
	}
}

// TestTokenFile: the daemon's token is created once, 0600, by one of
// many processes starting at once, and reused; a token file others can
// read is refused.
func TestTokenFile(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	toks := make([]string, 16)
	created := make([]bool, 16)
	for i := range toks {
		wg.Go(func() {
			tok, c, err := gateway.LoadOrCreateToken(root)
			if err != nil {
				t.Error(err)
			}
			toks[i], created[i] = tok, c
		})
	}
	wg.Wait()
	if n := len(slices.Compact(slices.Sorted(slices.Values(toks)))); n != 1 || len(toks[0]) != 64 {
		t.Fatalf("%d different tokens (%q), want one of 64 hex digits", n, toks)
	}
	if n := len(slices.DeleteFunc(created, func(c bool) bool { return !c })); n != 1 {
		t.Fatalf("%d calls created the token, want 1", n)
	}
	fi, err := os.Stat(client.TokenPath(root))
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Fatalf("data root holds %v, want the token file alone (no temporary files left)", entries)
	}
	again, c, err := gateway.LoadOrCreateToken(root)
	if err != nil || c || again != toks[0] {
		t.Fatalf("second start: %q created=%v %v, want the same token", again, c, err)
	}
	must(t, os.Chmod(client.TokenPath(root), 0o644))
	if _, _, err := gateway.LoadOrCreateToken(root); err == nil || !strings.Contains(err.Error(), "readable by other users") {
		t.Fatalf("a token file others can read: %v", err)
	}
	if _, err := client.ReadToken(root); err == nil {
		t.Fatal("the client read a token file others can read")
	}
	must(t, os.Remove(client.TokenPath(root)))
	must(t, os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), client.TokenPath(root)))
	if _, _, err := gateway.LoadOrCreateToken(root); err == nil {
		t.Fatal("a symlinked token file was followed")
	}
}

// TestSlowAndIdleConnectionsAreClosed: a body that does not arrive, a
// request whose headers do not end and a kept-alive idle connection are
// closed after their timeouts; a long answer (a chat turn that takes
// longer than the body timeout) is not cut.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	to := gateway.Timeouts{ReadHeader: 300 * time.Millisecond, Body: 300 * time.Millisecond, Idle: 300 * time.Millisecond}
	e := newEnv(t, envOptions{timeouts: to})
	addr := e.ts.Listener.Addr().String()
	closedWithin := func(name string, conn net.Conn, max time.Duration) {
		t.Helper()
		start := time.Now()
		must(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := io.Copy(io.Discard, conn) // until the server closes it
		if err != nil || time.Since(start) > max {
			t.Fatalf("%s: connection open for %s (%v), want closed within %s", name, time.Since(start), err, max)
		}
	}
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		must(t, err)
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	slow := dial()
	_, err := io.WriteString(slow, "POST /api/chat HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+e.token+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mess")
	must(t, err)
	closedWithin("a slow body", slow, 3*time.Second)

	// Without the token, the body is not waited for at all: the 401 at
	// once, then the connection is closed (the body timeout is 1 min).
	long := newEnv(t, envOptions{timeouts: gateway.Timeouts{Body: time.Minute}})
	unauth, err := net.Dial("tcp", long.ts.Listener.Addr().String())
	must(t, err)
	defer unauth.Close()
	_, err = io.WriteString(unauth, "POST /api/chat HTTP/1.1\r\nHost: "+long.ts.Listener.Addr().String()+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	must(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(unauth), nil)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a slow body without the token: %d, want 401", resp.StatusCode)
	}
	closedWithin("a slow body without the token", unauth, 2*time.Second)

	headers := dial()
	_, err = io.WriteString(headers, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n")
	must(t, err)
	closedWithin("unfinished headers", headers, 3*time.Second)

	idle := dial()
	_, err = io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	must(t, err)
	resp, err = http.ReadResponse(bufio.NewReader(idle), nil)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	closedWithin("an idle kept-alive connection", idle, 3*time.Second)

	// A turn of 700 ms, longer than the body timeout: its answer streams
	// to the end.
	if _, _, res := e.chat(client.ChatRequest{Message: "SLOW please"}); res.Status != "success" || res.Text != "slow done" {
		t.Fatalf("a turn longer than the body timeout: %+v", res)
	}
}

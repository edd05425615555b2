package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	{"POST", "/api/logout", `{}`},
	{"GET", "/api/logins", ""},
	{"DELETE", "/api/logins/L-000000000000", ""},
	{"DELETE", "/api/logins", ""},
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

// TestEveryRouteNeedsTheToken: without the token or a panel login every
// route answers 401 (the path tricks too), and so does the panel's
// session cookie alone, without its login's secret; only /healthz,
// /readyz, the API's OpenAPI document and the panel's files are public
// (none holds data). With the token or a whole login no route answers
// 401.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	e := newEnv(t, envOptions{})
	login := e.panelLogin()
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
		if code := e.send(r, http.Header{"Cookie": {login.cookie.String()}}); code != http.StatusUnauthorized {
			t.Errorf("%s %s with the session cookie alone: %d, want 401", r.method, r.path, code)
		}
		if code := e.send(r, http.Header{client.LoginHeader: {login.secret}}); code != http.StatusUnauthorized {
			t.Errorf("%s %s with the login's secret alone: %d, want 401", r.method, r.path, code)
		}
	}
	for _, p := range []string{"/healthz", "/readyz", "/api/openapi.json", "/", "/index.html", "/app.js", "/vendor/preact.mjs"} {
		if code := e.send(route{"GET", p, ""}, nil); code != http.StatusOK {
			t.Errorf("public GET %s: %d, want 200", p, code)
		}
	}
	for _, r := range allRoutes {
		if r.path == "/api/chat/stream?sessionKey=ava:web:x" || r.method == "POST" && r.path == "/api/chat" {
			continue // would wait for a turn or a stream: checked below
		}
		if r.path == "/api/logout" || r.method == "DELETE" && r.path == "/api/logins" {
			continue // would end the login: TestLogoutAndRevocation
		}
		creds := map[string]http.Header{"token": {"Authorization": {"Bearer " + e.token}}, "login": login.header()}
		if r.path == "/api/login" {
			delete(creds, "login") // a login is made with the token or a code, not with another login
		}
		for name, hdr := range creds {
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
	code, body := e.do("GET", "/api/sessions", "", map[string]string{"Authorization": "", "Cookie": login.cookie.String()})
	wantError(t, code, body, http.StatusUnauthorized, client.LoginHeader)
}

// panelLogin is a browser's web panel login: its cookie and the secret
// that goes with it.
type panelLogin struct {
	id     string
	cookie *http.Cookie
	secret string
}

// header is what a panel sends with each call.
func (l panelLogin) header() http.Header {
	return http.Header{"Cookie": {l.cookie.String()}, client.LoginHeader: {l.secret}}
}

// panelLogin logs in as a browser does with a one-time link (the code
// from its fragment, posted to /api/login), checking the answer and the
// cookie's attributes.
func (e *env) panelLogin() panelLogin {
	e.t.Helper()
	link := e.loginURL()
	_, code, ok := strings.Cut(link, "/#login=")
	if !ok || !strings.HasPrefix(link, e.ts.URL) {
		e.t.Fatalf("login link %q, want %s/#login=CODE", link, e.ts.URL)
	}
	resp, res := e.postLogin(`{"code":"`+code+`"}`, "")
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("POST /api/login with the link's code: %d", resp.StatusCode)
	}
	return e.checkLogin(resp, res)
}

// postLogin posts body to /api/login, with the bearer token tok unless
// it is empty.
func (e *env) postLogin(body, tok string) (*http.Response, client.LoginResult) {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.ts.URL+"/api/login", strings.NewReader(body))
	must(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "test browser")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	must(e.t, err)
	defer resp.Body.Close()
	var res client.LoginResult
	if resp.StatusCode == http.StatusOK {
		must(e.t, json.NewDecoder(resp.Body).Decode(&res))
	}
	return resp, res
}

// checkLogin checks a login's answer: one HttpOnly SameSite=Strict
// cookie of the daemon's port for the browser's session, and a secret.
func (e *env) checkLogin(resp *http.Response, res client.LoginResult) panelLogin {
	e.t.Helper()
	cs := resp.Cookies()
	_, port, _ := net.SplitHostPort(e.ts.Listener.Addr().String())
	if len(cs) != 1 || cs[0].Name != "ava_session_"+port || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode ||
		cs[0].Path != "/" || cs[0].MaxAge != 0 || !cs[0].Expires.IsZero() {
		e.t.Fatalf("login cookie %v (%q), want one HttpOnly SameSite=Strict ava_session_%s at / for the browser's session", cs, resp.Header.Values("Set-Cookie"), port)
	}
	if !res.LoggedIn || !strings.HasPrefix(res.ID, "L-") || len(res.Secret) < 40 || res.Secret == cs[0].Value ||
		res.ExpiresAt.Sub(time.Now()) > gateway.SessionLifetime || res.ExpiresAt.Sub(time.Now()) < gateway.SessionLifetime-time.Minute {
		e.t.Fatalf("login answer %+v", res)
	}
	return panelLogin{id: res.ID, cookie: &http.Cookie{Name: cs[0].Name, Value: cs[0].Value}, secret: res.Secret}
}

// TestLoginLinkWorksOnce: a one-time link's code (in its fragment, which
// browsers never send) logs a browser in once at POST /api/login; its
// second use and unknown codes are refused; a login needs its cookie and
// its secret together; another token's login opens nothing here; the
// token also logs a browser in.
func TestLoginLinkWorksOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	link := e.loginURL()
	_, code, _ := strings.Cut(link, "#login=")
	// Opening the link's page does not spend the code (the page does).
	if c := e.send(route{"GET", "/?login=" + code, ""}, nil); c != http.StatusOK {
		t.Fatalf("GET /?login=: %d, want the panel", c)
	}
	resp, res := e.postLogin(`{"code":"`+code+`"}`, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first use: %d", resp.StatusCode)
	}
	login := e.checkLogin(resp, res)
	for _, body := range []string{`{"code":"` + code + `"}`, `{"code":""}`, `{"code":"nosuchcode"}`, `{}`, `not json`} {
		req, _ := http.NewRequest("POST", e.ts.URL+"/api/login", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Fatalf("POST /api/login %s: %d %v %s, want 401 and no cookie", body, resp.StatusCode, resp.Cookies(), b)
		}
		if body == `{"code":"`+code+`"}` && !strings.Contains(string(b), "already used or has expired") {
			t.Fatalf("a spent code: %s", b)
		}
	}
	if c := e.send(route{"GET", "/api/sessions", ""}, login.header()); c != 200 {
		t.Fatalf("GET /api/sessions with the login: %d", c)
	}
	wrong := login.header()
	wrong.Set(client.LoginHeader, login.secret[1:])
	if c := e.send(route{"GET", "/api/sessions", ""}, wrong); c != http.StatusUnauthorized {
		t.Fatalf("the cookie with a wrong secret: %d, want 401", c)
	}
	// A login of a daemon with another token opens nothing here.
	other := newEnv(t, envOptions{token: "another-token"})
	ol := other.panelLogin()
	ol.cookie.Name = login.cookie.Name
	if c := e.send(route{"GET", "/api/sessions", ""}, ol.header()); c != http.StatusUnauthorized {
		t.Fatalf("another daemon's login: %d, want 401", c)
	}
	// The panel's dialog: the token for a login.
	resp, res = e.postLogin(`{}`, e.token)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /api/login with the token: %d", resp.StatusCode)
	}
	if byToken := e.checkLogin(resp, res); byToken.id == login.id {
		t.Fatal("two logins got one ID")
	}
	link, err := e.c.LoginLink(ctx(t))
	if err != nil || !strings.HasPrefix(link, e.ts.URL+"/#login=") {
		t.Fatalf("a new link from the client: %q %v", link, err)
	}
}

// TestLogoutAndRevocation: logins are listed with the caller's marked;
// logout ends the caller's login (its cookie dropped) and an event
// stream it holds at the next heartbeat, not the others'; the token
// revokes one login by its ID, or all; a revoked login is refused by
// every server on the store, not only the one that revoked it.
func TestLogoutAndRevocation(t *testing.T) {
	e := newEnv(t, envOptions{heartbeat: 100 * time.Millisecond})
	a, b, c := e.panelLogin(), e.panelLogin(), e.panelLogin()
	// A second server on the same runtime (as a second daemon on the
	// data root): it finds the logins the first made.
	second := httptest.NewServer(e.secondServer().Handler())
	t.Cleanup(second.Close)
	sessionsAt := func(base string, l panelLogin) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/api/sessions", nil)
		req.Header = l.header()
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, l := range []panelLogin{a, b, c} {
		if sessionsAt(second.URL, l) != 200 {
			t.Fatal("a login refused by a second server on the store")
		}
	}
	code, body := e.do("GET", "/api/logins", "", map[string]string{"Authorization": "", "Cookie": a.cookie.String(), client.LoginHeader: a.secret})
	var list client.PanelLoginList
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Logins) != 3 {
		t.Fatalf("GET /api/logins: %d %s", code, body)
	}
	for _, l := range list.Logins {
		if l.Current != (l.ID == a.id) || l.UserAgent != "test browser" {
			t.Fatalf("login %+v (the caller is %s)", l, a.id)
		}
	}

	// a holds a stream; logout ends it and the login.
	req, _ := http.NewRequestWithContext(ctx(t), "GET", e.ts.URL+"/api/chat/stream?sessionKey=ava:web:logout&after=0", nil)
	must(t, e.rt.EnsureSession(ctx(t), "ava:web:logout"))
	req.Header = a.header()
	stream, err := http.DefaultClient.Do(req)
	must(t, err)
	defer stream.Body.Close()
	if stream.StatusCode != 200 {
		t.Fatalf("a's stream: %d", stream.StatusCode)
	}
	req, _ = http.NewRequest("POST", e.ts.URL+"/api/logout", strings.NewReader(`{}`))
	req.Header = a.header()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %v, want 200 and the cookie dropped", resp.StatusCode, resp.Cookies())
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, stream.Body); ended <- err }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the logged-out login's stream still runs")
	}
	if sessionsAt(e.ts.URL, a) != http.StatusUnauthorized || sessionsAt(second.URL, a) != http.StatusUnauthorized {
		t.Fatal("a logged-out login still works")
	}
	if sessionsAt(e.ts.URL, b) != 200 {
		t.Fatal("logout ended another login")
	}

	// The token revokes b by its ID, at the second server.
	sc := client.New(second.URL, e.token)
	must(t, sc.RevokePanelLogin(ctx(t), b.id))
	if err := sc.RevokePanelLogin(ctx(t), b.id); !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("revoking a revoked login: %v, want 404", err)
	}
	if sessionsAt(e.ts.URL, b) != http.StatusUnauthorized || sessionsAt(e.ts.URL, c) != 200 {
		t.Fatal("revoking b: b still works, or c does not")
	}
	d := e.panelLogin()
	n, err := e.c.RevokePanelLogins(ctx(t))
	if err != nil || n != 2 {
		t.Fatalf("revoke all: %d %v, want 2 (c and d)", n, err)
	}
	for _, l := range []panelLogin{c, d} {
		if sessionsAt(e.ts.URL, l) != http.StatusUnauthorized || sessionsAt(second.URL, l) != http.StatusUnauthorized {
			t.Fatal("a login works after revoking all")
		}
	}
	if ls, err := e.c.PanelLogins(ctx(t)); err != nil || len(ls) != 0 {
		t.Fatalf("logins after revoking all: %+v %v", ls, err)
	}
	// With the token, logout has no login to end.
	code, body = e.do("POST", "/api/logout", "{}", nil)
	if code != 200 || !strings.Contains(body, `"loggedOut":false`) {
		t.Fatalf("logout with the token: %d %s", code, body)
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

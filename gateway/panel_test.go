package gateway_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPanelFiles checks the panel's files: served at / with their types
// and a strict Content-Security-Policy, and anything else a JSON 404.
func TestPanelFiles(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, c := range []struct{ path, ctype, want string }{
		{"/", "text/html", `<script type="importmap">`},
		{"/app.js", "text/javascript", "readHash"},
		{"/style.css", "text/css", ".timeline"},
		{"/vendor/preact.mjs", "text/javascript", "createElement"},
		{"/vendor/LICENSE.htm", "text/plain", "Apache License"},
	} {
		resp, body := get(t, e.ts.URL+c.path, nil)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(body, c.want) {
			t.Fatalf("GET %s: %d %s, body has %q: %v", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.want, strings.Contains(body, c.want))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self' 'sha256-") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Fatalf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("ETag") == "" {
			t.Fatalf("GET %s: headers %v", c.path, resp.Header)
		}
	}
	resp, _ := get(t, e.ts.URL+"/app.js", nil)
	again, _ := get(t, e.ts.URL+"/app.js", map[string]string{"If-None-Match": resp.Header.Get("ETag")})
	if again.StatusCode != http.StatusNotModified {
		t.Fatalf("GET /app.js with its ETag: %d, want 304", again.StatusCode)
	}
	for _, path := range []string{"/nosuch.js", "/api/nosuch", "/vendor.sh", "/panel.go", "/vendor/SHA256SUMS", "/../go.mod"} {
		code, body := e.do("GET", path, "", nil)
		wantError(t, code, body, 404, "no route")
	}
	// The page's path under another method: 405, not 404.
	code, body := e.do("POST", "/", `{}`, nil)
	wantError(t, code, body, 405, "not allowed")
}

// TestPanelFilesNeedNoTokenButTheAPIDoes: a browser cannot send a
// bearer header when it loads a page, so the panel's files (which hold
// no data) are served without the token; the API still needs it, and
// the Host rule applies to the panel too.
func TestPanelFilesNeedNoTokenButTheAPIDoes(t *testing.T) {
	e := newEnv(t, envOptions{token: "s3cret"})
	none := map[string]string{"Authorization": ""}
	for _, path := range []string{"/", "/app.js", "/vendor/hooks.mjs", "/index.html"} {
		if code, _ := e.do("GET", path, "", none); code != 200 {
			t.Fatalf("GET %s without the token: %d, want 200", path, code)
		}
	}
	for _, path := range []string{"/api/sessions", "/api/chat/stream?sessionKey=ava:web:x", "/metrics", "/nosuch.js"} {
		code, body := e.do("GET", path, "", none)
		wantError(t, code, body, 401, "token")
	}
	code, body := e.do("POST", "/app.js", `{}`, none)
	wantError(t, code, body, 401, "token")
	code, body = e.do("GET", "/", "", map[string]string{"Host": "evil.example", "Authorization": ""})
	wantError(t, code, body, 403, "DNS rebinding")
}

// TestVendoredFiles checks that the committed copies of the vendored
// modules are the ones web/vendor.sh fetched (web/vendor/SHA256SUMS).
func TestVendoredFiles(t *testing.T) {
	f, err := os.Open(filepath.Join("web", "vendor", "SHA256SUMS"))
	must(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		b, err := os.ReadFile(filepath.Join("web", "vendor", name))
		must(t, err)
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("web/vendor/%s does not match SHA256SUMS: vendored files are kept unmodified; run web/vendor.sh", name)
		}
		n++
	}
	must(t, sc.Err())
	if n != 7 {
		t.Fatalf("SHA256SUMS lists %d files, want 7", n)
	}
}

// get fetches url with headers and returns the response and its body.
func get(t *testing.T, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	must(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, err = bufio.NewReader(resp.Body).WriteTo(&b)
	must(t, err)
	return resp, b.String()
}

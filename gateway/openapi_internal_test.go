package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestOpenAPINamesTheDaemon: the document served names the address the
// daemon is bound to and its cookie; bound to every interface, the
// address the client reached.
func TestOpenAPINamesTheDaemon(t *testing.T) {
	for _, tc := range []struct{ addr, host, url, cookie string }{
		{"127.0.0.1:8123", "localhost:8123", "http://127.0.0.1:8123", "ava_session_8123"},
		{"[::1]:7777", "[::1]:7777", "http://[::1]:7777", "ava_session_7777"},
		{"0.0.0.0:9000", "ava.example:9000", "http://ava.example:9000", "ava_session_9000"},
		{":9001", "10.0.0.5:9001", "http://10.0.0.5:9001", "ava_session_9001"},
	} {
		g, err := newGuard(tc.addr, "tok", nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := newAuth("tok", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{opt: Options{Addr: tc.addr}, guard: g, auth: a}
		h, err := s.openAPIHandler()
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/api/openapi.json", nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var doc struct {
			Servers    []struct{ URL string }
			Components struct {
				SecuritySchemes struct {
					PanelCookie struct{ Name string } `json:"panelCookie"`
				} `json:"securitySchemes"`
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		if len(doc.Servers) != 1 || doc.Servers[0].URL != tc.url || doc.Components.SecuritySchemes.PanelCookie.Name != tc.cookie {
			t.Errorf("bound to %s, reached as %s: servers %+v, cookie %q; want %s, %s", tc.addr, tc.host, doc.Servers,
				doc.Components.SecuritySchemes.PanelCookie.Name, tc.url, tc.cookie)
		}
	}
	if _, err := openAPIFor("http://x", "c"); err != nil {
		t.Fatalf("the embedded document: %v", err)
	}
}

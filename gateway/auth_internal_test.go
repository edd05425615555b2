package gateway

import (
	"net/http"
	"testing"
	"time"
)

// TestLoginCodesAndCookiesExpire: an unused login code is void after
// LoginCodeTTL, a session cookie after SessionLifetime, and a cookie
// whose expiry was changed no longer matches its signature.
func TestLoginCodesAndCookiesExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, err := newAuth("tok", "127.0.0.1:7777")
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return now }
	late, err := a.issueCode()
	if err != nil {
		t.Fatal(err)
	}
	inTime, _ := a.issueCode()
	now = now.Add(LoginCodeTTL - time.Second)
	if !a.redeem(inTime) {
		t.Fatal("a code within its TTL was refused")
	}
	now = now.Add(2 * time.Second)
	if a.redeem(late) {
		t.Fatal("a code past its TTL was accepted")
	}
	c, err := a.sessionCookie()
	if err != nil {
		t.Fatal(err)
	}
	req := func(value string) *http.Request {
		r, _ := http.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: c.Name, Value: value})
		return r
	}
	if c.Name != "ava_session_7777" || !a.session(req(c.Value)) {
		t.Fatalf("a fresh cookie %s refused", c.Name)
	}
	forged := c.Value[:len(c.Value)-1] + "0"
	if forged == c.Value {
		forged = c.Value[:len(c.Value)-1] + "1"
	}
	if a.session(req(forged)) {
		t.Fatal("a cookie with a changed signature was accepted")
	}
	now = now.Add(SessionLifetime + time.Second)
	if a.session(req(c.Value)) {
		t.Fatal("an expired cookie was accepted")
	}
}

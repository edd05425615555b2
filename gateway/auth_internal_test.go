package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

// TestLoginCodesAndLoginsExpire: an unused login code is void after
// LoginCodeTTL; a web panel login needs its cookie and its secret, ends
// SessionLifetime after its last use, is renewed while used (but not on
// every call), never outlives SessionMaxAge, and is void under another
// token.
func TestLoginCodesAndLoginsExpire(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ava.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a, err := newAuth("tok", "127.0.0.1:7777", st, slog.New(slog.DiscardHandler))
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

	c, res, err := a.newLogin(ctx, "test browser")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "ava_session_7777" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.MaxAge != 0 || res.Secret == "" || res.Secret == c.Value {
		t.Fatalf("login: cookie %+v, result %+v", c, res)
	}
	req := func(cookie, secret string) *http.Request {
		r, _ := http.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: c.Name, Value: cookie})
		if secret != "" {
			r.Header.Set(client.LoginHeader, secret)
		}
		return r
	}
	ok := func(cookie, secret string) bool {
		t.Helper()
		got, err := a.check(req(cookie, secret))
		var u unauthorized
		if err != nil && !errors.As(err, &u) {
			t.Fatalf("check: %v", err)
		}
		return err == nil && got.login != nil && got.login.ID == res.ID
	}
	if !ok(c.Value, res.Secret) {
		t.Fatal("a fresh login refused")
	}
	for name, r := range map[string][2]string{"the cookie alone": {c.Value, ""}, "a wrong secret": {c.Value, res.Secret + "x"},
		"the secret as the cookie": {res.Secret, res.Secret}, "another cookie": {c.Value + "x", res.Secret}} {
		if ok(r[0], r[1]) {
			t.Errorf("%s was accepted", name)
		}
	}
	expiry := func() time.Time {
		l, err := st.LoginByCookie(ctx, a.hash("cookie", c.Value))
		if err != nil {
			t.Fatal(err)
		}
		return l.ExpiresAt
	}
	// A use within renewEvery writes nothing; a later one moves the
	// expiry to SessionLifetime from then.
	first := expiry()
	now = now.Add(renewEvery - time.Second)
	ok(c.Value, res.Secret)
	if !expiry().Equal(first) {
		t.Fatal("a use within renewEvery renewed the login")
	}
	now = now.Add(time.Hour)
	ok(c.Value, res.Secret)
	if want := now.Add(SessionLifetime); !expiry().Equal(want) {
		t.Fatalf("renewed to %v, want %v", expiry(), want)
	}
	now = now.Add(SessionLifetime + time.Second)
	if ok(c.Value, res.Secret) {
		t.Fatal("a login unused for SessionLifetime was accepted")
	}

	// Used every few hours, a login still ends SessionMaxAge after it
	// began.
	c, res, _ = a.newLogin(ctx, "")
	began := now
	for now.Add(6 * time.Hour).Before(began.Add(SessionMaxAge)) {
		now = now.Add(6 * time.Hour)
		if !ok(c.Value, res.Secret) {
			t.Fatalf("a login used every 6 h refused after %v", now.Sub(began))
		}
	}
	now = began.Add(SessionMaxAge)
	if ok(c.Value, res.Secret) {
		t.Fatal("a login older than SessionMaxAge was accepted")
	}

	// Another token does not know this daemon's logins.
	c, res, _ = a.newLogin(ctx, "")
	other, err := newAuth("another token", "127.0.0.1:7777", st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	other.now = a.now
	if _, err := other.check(req(c.Value, res.Secret)); err == nil {
		t.Fatal("another token's daemon accepted the login")
	}
	if _, err := st.LoginByCookie(ctx, other.hash("cookie", c.Value)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another token's hash found a login: %v", err)
	}
}

package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/store"
)

func loginCases() []testCase {
	return []testCase{{"Logins", testLogins}}
}

// A web panel login is found by its cookie's hash, renewed, listed,
// revoked one by one or all at once, and forgotten once expired.
func testLogins(t *testing.T, s store.Store) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	login := func(n int, created time.Time, life time.Duration) store.Login {
		return store.Login{ID: fmt.Sprintf("L-%012d", n), CookieHash: fmt.Sprintf("cookie-%d", n), SecretHash: fmt.Sprintf("secret-%d", n),
			UserAgent: "Mozilla/5.0 " + strings.Repeat("é", 200), CreatedAt: created, ExpiresAt: created.Add(life)}
	}
	a := login(1, t0, time.Hour)
	must(t, s.CreateLogin(ctx(t), a))
	wantErr(t, s.CreateLogin(ctx(t), a), store.ErrDuplicate)
	dupCookie := login(9, t0, time.Hour)
	dupCookie.CookieHash = a.CookieHash
	wantErr(t, s.CreateLogin(ctx(t), dupCookie), store.ErrDuplicate)
	wantErr(t, s.CreateLogin(ctx(t), store.Login{ID: "L-x", CreatedAt: t0, ExpiresAt: t0}), store.ErrEmpty)

	got, err := s.LoginByCookie(ctx(t), "cookie-1")
	must(t, err)
	if got.ID != a.ID || got.SecretHash != "secret-1" || !got.CreatedAt.Equal(t0) || !got.ExpiresAt.Equal(a.ExpiresAt) ||
		len(got.UserAgent) > store.MaxLoginUserAgent || !strings.HasPrefix(got.UserAgent, "Mozilla/5.0 é") || !strings.HasSuffix(got.UserAgent, "é") {
		t.Fatalf("login by cookie: %+v", got)
	}
	_, err = s.LoginByCookie(ctx(t), "cookie-nosuch")
	wantErr(t, err, store.ErrNotFound)

	must(t, s.RenewLogin(ctx(t), a.ID, t0.Add(5*time.Hour)))
	if got, _ = s.LoginByCookie(ctx(t), "cookie-1"); !got.ExpiresAt.Equal(t0.Add(5 * time.Hour)) {
		t.Fatalf("renewed login expires %v", got.ExpiresAt)
	}
	wantErr(t, s.RenewLogin(ctx(t), "L-nosuch", t0), store.ErrNotFound)

	// A login created after a's expiry forgets a.
	b := login(2, t0.Add(6*time.Hour), time.Hour)
	must(t, s.CreateLogin(ctx(t), b))
	_, err = s.LoginByCookie(ctx(t), "cookie-1")
	wantErr(t, err, store.ErrNotFound)
	c := login(3, t0.Add(6*time.Hour+time.Minute), time.Hour)
	must(t, s.CreateLogin(ctx(t), c))
	all, err := s.Logins(ctx(t))
	must(t, err)
	if len(all) != 2 || all[0].ID != c.ID || all[1].ID != b.ID {
		t.Fatalf("logins %+v, want c then b", all)
	}
	must(t, s.RevokeLogin(ctx(t), b.ID))
	wantErr(t, s.RevokeLogin(ctx(t), b.ID), store.ErrNotFound)
	_, err = s.LoginByCookie(ctx(t), "cookie-2")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.RenewLogin(ctx(t), b.ID, t0.Add(9*time.Hour)), store.ErrNotFound)
	must(t, s.CreateLogin(ctx(t), login(4, t0.Add(6*time.Hour+2*time.Minute), time.Hour)))
	n, err := s.RevokeLogins(ctx(t))
	must(t, err)
	if n != 2 {
		t.Fatalf("revoked %d logins, want 2", n)
	}
	if all, _ = s.Logins(ctx(t)); len(all) != 0 {
		t.Fatalf("logins after revoking all: %+v", all)
	}
}

package record

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/avaagent/ava/store"
)

// LoginColumns are the logins table's columns, in ScanLogin's order.
const LoginColumns = `id, cookie_hash, secret_hash, user_agent, created_at, expires_at`

// CheckLogin refuses a login without its ID, hashes or times, and cuts
// its user agent to store.MaxLoginUserAgent bytes (on a rune boundary).
func CheckLogin(l *store.Login) error {
	for _, f := range [][2]string{{"login ID", l.ID}, {"login cookie hash", l.CookieHash}, {"login secret hash", l.SecretHash}} {
		if err := CheckKey(f[0], f[1]); err != nil {
			return err
		}
	}
	if l.CreatedAt.IsZero() || l.ExpiresAt.IsZero() {
		return fmt.Errorf("login %s: created and expiry times are required", l.ID)
	}
	if ua := strings.ToValidUTF8(l.UserAgent, "?"); len(ua) > store.MaxLoginUserAgent {
		cut := store.MaxLoginUserAgent
		for cut > 0 && !utf8.RuneStart(ua[cut]) {
			cut--
		}
		l.UserAgent = ua[:cut]
	} else {
		l.UserAgent = ua
	}
	return nil
}

// ScanLogin reads one row of LoginColumns.
func ScanLogin(sc Scanner) (store.Login, error) {
	var l store.Login
	var created, expires int64
	if err := sc.Scan(&l.ID, &l.CookieHash, &l.SecretHash, &l.UserAgent, &created, &expires); err != nil {
		return store.Login{}, err
	}
	l.CreatedAt, l.ExpiresAt = FromNS(created), FromNS(expires)
	return l, nil
}

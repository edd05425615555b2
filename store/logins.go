package store

import (
	"context"
	"time"
)

// Login is one browser logged in to the web panel (see package gateway
// and docs/security.md): a session cookie and a second secret the panel
// sends as a header, both kept only as keyed hashes (the daemon derives
// the key from its token, so a reader of the store cannot use them and a
// new token voids every login). It lives in the store so that every
// process sharing the data root or the cluster's database sees it, and a
// revocation in one is a revocation in all.
type Login struct {
	// ID names the login in lists and revocations: "L-" and 12 hex
	// characters; it is neither of the two secrets.
	ID string
	// CookieHash is the keyed hash of the cookie's value: how a request
	// finds its login. Unique.
	CookieHash string
	// SecretHash is the keyed hash of the header's secret.
	SecretHash string
	// UserAgent is the browser's, cut, to tell logins apart in a list.
	UserAgent string
	CreatedAt time.Time
	// ExpiresAt moves forward while the login is used (RenewLogin).
	ExpiresAt time.Time
}

// MaxLoginUserAgent bounds Login.UserAgent in bytes.
const MaxLoginUserAgent = 200

// LoginStore keeps the web panel's logins.
type LoginStore interface {
	// CreateLogin stores l and forgets the logins that expired before
	// l.CreatedAt. A login with l's ID or cookie hash is ErrDuplicate.
	CreateLogin(ctx context.Context, l Login) error
	// LoginByCookie returns the login whose cookie hash is h, expired or
	// not (the caller compares ExpiresAt with its clock); ErrNotFound
	// when there is none (never created, revoked or forgotten).
	LoginByCookie(ctx context.Context, h string) (Login, error)
	// RenewLogin moves a login's expiry to until; ErrNotFound when it
	// was revoked meanwhile.
	RenewLogin(ctx context.Context, id string, until time.Time) error
	// Logins returns every stored login, newest first, expired ones
	// included until a CreateLogin forgets them.
	Logins(ctx context.Context) ([]Login, error)
	// RevokeLogin deletes one login; ErrNotFound when there is none.
	RevokeLogin(ctx context.Context, id string) error
	// RevokeLogins deletes every login and returns how many there were.
	RevokeLogins(ctx context.Context) (int, error)
}

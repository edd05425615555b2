package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/avaagent/ava/gateway/client"
)

// tokenBytes is the entropy of a created token (256 bits).
const tokenBytes = 32

// LoadOrCreateToken returns the daemon's token kept in the data root
// (client.TokenPath), creating it at the first start: 32 random bytes in
// hex, in a file of mode 0600. Several processes may start at once on one
// data root: the file is written whole under a temporary name and linked
// into place, which fails if another process was first, and then that
// process's token is read, so all of them use one token and none ever
// reads a half-written file. created reports whether this call made it.
func LoadOrCreateToken(dataRoot string) (token string, created bool, err error) {
	token, err = client.ReadToken(dataRoot)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return token, false, err
	}
	token, err = newToken()
	if err != nil {
		return "", false, err
	}
	tmp, err := writeTemp(dataRoot, token)
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, client.TokenPath(dataRoot)); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process was first: use its token
			token, err = client.ReadToken(dataRoot)
			return token, false, err
		}
		return "", false, fmt.Errorf("create the daemon's token %s: %w", client.TokenPath(dataRoot), err)
	}
	return token, true, nil
}

func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("draw the daemon's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeTemp writes token to a new private file beside the token file and
// returns its path.
func writeTemp(dataRoot, token string) (string, error) {
	f, err := os.CreateTemp(dataRoot, "."+client.TokenFileName+".*")
	if err != nil {
		return "", fmt.Errorf("create the daemon's token in %s: %w", dataRoot, err)
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", fmt.Errorf("write the daemon's token %s: %w", filepath.Base(name), err)
	}
	if err := f.Chmod(0o600); err != nil { // CreateTemp makes 0600 already; say so
		return fail(err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("write the daemon's token %s: %w", filepath.Base(name), err)
	}
	return name, nil
}

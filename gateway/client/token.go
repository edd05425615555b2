package client

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TokenFileName is the name of the daemon's token file in the data root
// ($AVA_DATA_ROOT/daemon.token): the daemon creates it at its first start
// (mode 0600) unless AVA_TOKEN is set, and the command line reads it.
const TokenFileName = "daemon.token"

// maxTokenFile bounds what ReadToken reads.
const maxTokenFile = 4 << 10

// ErrTokenFileExposed means the token file can be read by other users
// (its mode has group or other bits), so its token is no secret.
var ErrTokenFileExposed = errors.New("the daemon's token file is readable by other users")

// TokenPath is the token file of the data root dataRoot.
func TokenPath(dataRoot string) string { return filepath.Join(dataRoot, TokenFileName) }

// ReadToken reads the daemon's token from the data root. A missing file
// is an error that wraps fs.ErrNotExist. Only a regular file of the
// caller's own, not readable by group or others, is read, without
// following a symlink and without blocking on a FIFO.
func ReadToken(dataRoot string) (string, error) {
	path := TokenPath(dataRoot)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", fmt.Errorf("read the daemon's token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read the daemon's token %s: %w", path, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("read the daemon's token %s: not a regular file (%s); refused", path, fi.Mode().Type())
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%w: %s has mode %04o; remove it (the daemon makes a new one at its next start) or chmod 600 it",
			ErrTokenFileExposed, path, fi.Mode().Perm())
	case fi.Size() > maxTokenFile:
		return "", fmt.Errorf("read the daemon's token %s: %d bytes, over the %d-byte limit", path, fi.Size(), maxTokenFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("read the daemon's token %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || len(b) > maxTokenFile {
		return "", fmt.Errorf("read the daemon's token %s: empty or too long; remove it (the daemon makes a new one at its next start)", path)
	}
	return tok, nil
}

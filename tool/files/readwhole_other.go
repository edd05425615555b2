//go:build !unix

package files

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// dirFD is a folder that files are read from.
type dirFD struct {
	path string
}

// openDir returns the folder at path.
func openDir(path string) (dirFD, error) { return dirFD{path: path}, nil }

func (d dirFD) close() {}

// readWhole reads the file name in d, at most maxSize bytes.
func (d dirFD) readWhole(name string, maxSize int64, buf *[]byte) ([]byte, error) {
	p := filepath.Join(d.path, name)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", p)
	}
	if fi.Size() > maxSize {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	*buf = data
	return data, nil
}

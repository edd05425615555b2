// Package attach keeps the files a person attaches to a message: each
// stored under the data root (attachments/<id>/: the bytes and a
// meta.json), within a size limit per file and a count limit per
// upload, and only of the types a model or the tools can use: UTF-8
// text, images (PNG, JPEG, GIF, WebP) and PDF.
//
// An upload is all or nothing: its files are checked and written in a
// temporary folder under attachments/ and renamed into place only when
// every one of them is good, so a refused or failed upload stores
// nothing, and a crash leaves at most a temporary folder that the next
// Store removes.
package attach

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The kinds of attachment.
const (
	Text  = "text"  // UTF-8 text: given to the model inline
	Image = "image" // PNG, JPEG, GIF or WebP
	File  = "file"  // PDF
)

// Errors, each wrapped with the file and the limit it broke.
var (
	ErrTooBig      = errors.New("too big")
	ErrTooMany     = errors.New("too many files")
	ErrUnknownType = errors.New("unknown type")
	ErrEmpty       = errors.New("empty")
	ErrBadName     = errors.New("bad file name")
	ErrNotFound    = errors.New("no such attachment")
)

// Attachment is one stored file.
type Attachment struct {
	// ID is "A-" and 12 hex digits.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Type is the media type, from the content (and the name for text).
	Type string `json:"type"`
	// Kind is text, image or file.
	Kind      string    `json:"kind"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"createdAt"`
}

// Upload is one file to store: its name as the person gave it and its
// content.
type Upload struct {
	Name string
	Body io.Reader
}

// Store keeps attachments under one folder.
type Store struct {
	dir      string
	maxBytes int64
	maxFiles int
}

// New returns the store of dir (made if missing; temporary folders a
// crash left are removed), with the limits per file and per upload.
func New(dir string, maxBytes int64, maxFiles int) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("attachments folder: %w", err)
	}
	if olds, err := filepath.Glob(filepath.Join(dir, ".tmp-*")); err == nil {
		for _, old := range olds {
			_ = os.RemoveAll(old)
		}
	}
	return &Store{dir: dir, maxBytes: maxBytes, maxFiles: maxFiles}, nil
}

// MaxFiles is how many files one upload or one message may carry.
func (s *Store) MaxFiles() int { return s.maxFiles }

// Limits are the largest file and how many files one upload may hold.
func (s *Store) Limits() (maxBytes int64, maxFiles int) { return s.maxBytes, s.maxFiles }

// Put checks and stores files, all or none.
func (s *Store) Put(files []Upload) ([]Attachment, error) {
	switch {
	case len(files) == 0:
		return nil, fmt.Errorf("no file: %w", ErrEmpty)
	case len(files) > s.maxFiles:
		return nil, fmt.Errorf("%d files, at most %d at once (AVA_ATTACH_MAX_FILES): %w", len(files), s.maxFiles, ErrTooMany)
	}
	tmp, err := os.MkdirTemp(s.dir, ".tmp-")
	if err != nil {
		return nil, fmt.Errorf("store attachments: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := make([]Attachment, 0, len(files))
	for _, f := range files {
		a, err := s.write(tmp, f)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	for i, a := range out {
		if err := os.Rename(filepath.Join(tmp, a.ID), filepath.Join(s.dir, a.ID)); err != nil {
			for _, done := range out[:i] {
				_ = os.RemoveAll(filepath.Join(s.dir, done.ID))
			}
			return nil, fmt.Errorf("store attachment %s: %w", a.Name, err)
		}
	}
	return out, nil
}

// write checks one file and writes it in tmp/<id>/.
func (s *Store) write(tmp string, f Upload) (Attachment, error) {
	name, err := cleanName(f.Name)
	if err != nil {
		return Attachment{}, err
	}
	body, err := io.ReadAll(io.LimitReader(f.Body, s.maxBytes+1))
	switch {
	case err != nil:
		return Attachment{}, fmt.Errorf("read %s: %w", name, err)
	case int64(len(body)) > s.maxBytes:
		return Attachment{}, fmt.Errorf("%s: over the limit of %d bytes a file (AVA_ATTACH_MAX_BYTES): %w", name, s.maxBytes, ErrTooBig)
	case len(body) == 0:
		return Attachment{}, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	typ, kind := detect(name, body)
	if kind == "" {
		return Attachment{}, fmt.Errorf("%s (%s): %w: attach text (UTF-8), an image (PNG, JPEG, GIF, WebP) or a PDF", name, typ, ErrUnknownType)
	}
	a := Attachment{ID: newID(), Name: name, Type: typ, Kind: kind, Size: int64(len(body)), CreatedAt: time.Now().UTC()}
	dir := filepath.Join(tmp, a.ID)
	meta, _ := json.Marshal(a)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return Attachment{}, fmt.Errorf("store %s: %w", name, err)
	}
	if err := writeSynced(filepath.Join(dir, "data"), body); err != nil {
		return Attachment{}, fmt.Errorf("store %s: %w", name, err)
	}
	if err := writeSynced(filepath.Join(dir, "meta.json"), meta); err != nil {
		return Attachment{}, fmt.Errorf("store %s: %w", name, err)
	}
	return a, nil
}

// writeSynced writes b to a new file and syncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var idPattern = regexp.MustCompile(`^A-[0-9a-f]{12}$`)

// ValidID reports whether id has an attachment ID's form.
func ValidID(id string) bool { return idPattern.MatchString(id) }

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "A-" + hex.EncodeToString(b[:])
}

// Get returns attachment id's record.
func (s *Store) Get(id string) (Attachment, error) {
	if !ValidID(id) {
		return Attachment{}, fmt.Errorf("%q is not an attachment ID (A- and 12 hex digits): %w", id, ErrNotFound)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, id, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return Attachment{}, fmt.Errorf("attachment %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Attachment{}, fmt.Errorf("read attachment %s: %w", id, err)
	}
	var a Attachment
	if err := json.Unmarshal(b, &a); err != nil {
		return Attachment{}, fmt.Errorf("read attachment %s: %w", id, err)
	}
	return a, nil
}

// Read returns attachment id's record and content.
func (s *Store) Read(id string) (Attachment, []byte, error) {
	a, err := s.Get(id)
	if err != nil {
		return a, nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.dir, id, "data"))
	if err != nil {
		return a, nil, fmt.Errorf("read attachment %s: %w", id, err)
	}
	return a, b, nil
}

// cleanName is a file name safe to show and to write: its base name,
// without control characters, quotes or the separator the message's
// attachment line uses (" · "), at most 120 characters.
func cleanName(name string) (string, error) {
	name = filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	name = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsControl(r), r == '"', r == '·', r == '/', unicode.Is(unicode.Cf, r):
			return '_'
		}
		return r
	}, strings.TrimSpace(name))
	if r := []rune(name); len(r) > 120 {
		name = string(r[:120])
	}
	if name == "" || name == "." || name == ".." || strings.Trim(name, "_") == "" {
		return "", fmt.Errorf("%q: %w", name, ErrBadName)
	}
	return name, nil
}

// images are the image types a model takes.
var images = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// detect is body's media type and kind ("" when it is none Ava takes):
// by its content, and by its name for text.
func detect(name string, body []byte) (typ, kind string) {
	sniffed, _, _ := strings.Cut(http.DetectContentType(body), ";")
	switch {
	case images[sniffed]:
		return sniffed, Image
	case sniffed == "application/pdf":
		return sniffed, File
	case utf8.Valid(body) && !bytes.ContainsRune(body, 0):
		if byName, _, _ := strings.Cut(mime.TypeByExtension(filepath.Ext(name)), ";"); isText(byName) {
			return byName, Text
		}
		return "text/plain", Text
	}
	return sniffed, ""
}

// isText reports a media type whose content is text.
func isText(t string) bool {
	return strings.HasPrefix(t, "text/") || t == "application/json" || t == "application/xml" ||
		t == "application/yaml" || t == "application/x-yaml" || t == "application/javascript" || t == "application/toml"
}

// Line is the head of the line that names a in a message, as the model
// and the panel read it: "[Attachment A-…: name · type · size bytes"
// (the caller ends it, with "]" after what it says of the file).
func Line(a Attachment) string {
	return fmt.Sprintf("[Attachment %s: %s · %s · %d bytes", a.ID, a.Name, a.Type, a.Size)
}

// imageLine finds the lines Line wrote for images.
var imageLine = regexp.MustCompile(`(?m)^\[Attachment (A-[0-9a-f]{12}): [^\n]*? · (image/(?:png|jpeg|gif|webp)) · [0-9]+ bytes`)

// ImageRef is an image a message's text attaches.
type ImageRef struct {
	ID   string
	Type string
}

// ImageRefs are the images text attaches (the lines Line wrote for
// images, each at the start of a line), in order, each once.
func ImageRefs(text string) []ImageRef {
	var out []ImageRef
	seen := map[string]bool{}
	for _, m := range imageLine.FindAllStringSubmatch(text, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, ImageRef{ID: m[1], Type: m[2]})
		}
	}
	return out
}

// Image returns the media type and bytes of the image id: an attachment
// that is not an image is an error naming its kind.
func (s *Store) Image(_ context.Context, id string) (string, []byte, error) {
	a, body, err := s.Read(id)
	if err != nil {
		return "", nil, err
	}
	if a.Kind != Image {
		return "", nil, fmt.Errorf("attachment %s (%s) is a %s, not an image", id, a.Name, a.Kind)
	}
	return a.Type, body, nil
}

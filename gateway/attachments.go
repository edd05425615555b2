package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/avaagent/ava"
)

// uploadPattern is the route of uploads, the one that takes
// multipart/form-data (notJSON).
const uploadPattern = "POST /api/attachments"

// upload answers POST /api/attachments: a multipart/form-data body whose
// "file" parts are stored (ava.Runtime.Attach), all or none; 201 with
// their records, whose IDs a message then names (ChatRequest.Attachments).
// Too many files, a file too big, empty or of a type Ava does not take is
// 400 (the body over the limits in all, 413) and nothing is stored.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if s.isDraining() {
		fail(w, errDraining)
		return
	}
	maxBytes, maxFiles := s.rt.AttachLimits()
	if maxFiles == 0 {
		fail(w, ava.ErrReadOnly)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		fail(w, badRequestf("attachments: want a multipart/form-data body with one \"file\" part a file, not %q", mt))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, int64(maxFiles+1)*(maxBytes+1)+s.opt.MaxBody)
	files, err := readFileParts(r, maxBytes, maxFiles)
	if err != nil {
		fail(w, err)
		return
	}
	out, err := s.rt.Attach(r.Context(), files)
	if err != nil {
		fail(w, err)
		return
	}
	// The core's records, in the shape client.AttachResponse decodes.
	writeJSON(w, http.StatusCreated, struct {
		Attachments []ava.Attachment `json:"attachments"`
	}{out})
}

// readFileParts reads the body's "file" parts, each up to maxBytes and
// one byte more (so that the store names a file too big), and at most
// maxFiles and one more (so that it names too many).
func readFileParts(r *http.Request, maxBytes int64, maxFiles int) ([]ava.AttachmentUpload, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, badRequestf("attachments: %v", err)
	}
	var files []ava.AttachmentUpload
	for len(files) <= maxFiles {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, fmt.Errorf("attachments: body over %d bytes: %w", tooBig.Limit, err)
		case err != nil:
			return nil, badRequestf("attachments: bad multipart body: %v", err)
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		body, err := io.ReadAll(io.LimitReader(part, maxBytes+1))
		part.Close()
		if err != nil {
			if errors.As(err, &tooBig) {
				return nil, fmt.Errorf("attachments: body over %d bytes: %w", tooBig.Limit, err)
			}
			return nil, badRequestf("attachments: reading %s: %v", part.FileName(), err)
		}
		files = append(files, ava.AttachmentUpload{Name: part.FileName(), Body: bytes.NewReader(body)})
	}
	return files, nil
}

// attachment answers GET /api/attachments/{id}: the file as it was
// attached, to download (never shown inline: it is the person's, and
// untrusted).
func (s *Server) attachment(w http.ResponseWriter, r *http.Request) {
	a, body, err := s.rt.AttachmentContent(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	typ := a.Type
	if a.Kind == "text" {
		typ = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Name}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.Write(body)
}

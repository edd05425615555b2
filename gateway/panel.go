package gateway

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/avaagent/ava/internal/lazyre"
)

// webFiles is the web panel: plain HTML, CSS and ES modules, with the
// vendored Preact, htm and markdown-it modules (see gateway/web/vendor.sh). There is
// no build step: the files are served as they are in the repository.
//
//go:embed web/index.html web/*.js web/*.css web/vendor/*.mjs web/vendor/LICENSE.*
var webFiles embed.FS

// panel serves the embedded web panel at / with strict security headers.
// Its files hold no data (everything comes from the API, which needs the
// token or a session cookie), so they are served without either: each
// at its exact path (see Server.routes).
type panel struct {
	files fs.FS
	// etags are the files' content hashes, by path.
	etags map[string]string
	// csp is the Content-Security-Policy of every panel response.
	csp string
}

// inlineScript finds index.html's one inline script (the import map),
// which the Content-Security-Policy allows by its hash.
var inlineScript = lazyre.New(`(?s)<script type="importmap">(.*?)</script>`)

func newPanel() (*panel, error) {
	files, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, fmt.Errorf("web panel files: %w", err)
	}
	p := &panel{files: files, etags: map[string]string{}}
	err = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		p.etags[name] = `"` + hex.EncodeToString(sum[:8]) + `"`
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web panel files: %w", err)
	}
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		return nil, fmt.Errorf("web panel index: %w", err)
	}
	m := inlineScript().FindSubmatch(index)
	if m == nil {
		return nil, fmt.Errorf("web panel index: no import map")
	}
	sum := sha256.Sum256(m[1])
	p.csp = "default-src 'self'; script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return p, nil
}

// names are the panel's file names, sorted.
func (p *panel) names() []string {
	return slices.Sorted(maps.Keys(p.etags))
}

// name maps a URL path to a file name ("/" is index.html).
func (p *panel) name(urlPath string) string {
	name := strings.TrimPrefix(path.Clean("/"+urlPath), "/")
	if name == "" {
		return "index.html"
	}
	return name
}

// ServeHTTP serves one file; anything else is the API's JSON 404.
func (p *panel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := p.name(r.URL.Path)
	etag, ok := p.etags[name]
	if !ok || strings.HasPrefix(r.URL.Path, "/api/") {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s (the web panel is at /; the API is in docs/api.md and /api/openapi.json)", r.Method, r.URL.Path))
		return
	}
	b, err := fs.ReadFile(p.files, name)
	if err != nil {
		fail(w, fmt.Errorf("web panel %s: %w", name, err))
		return
	}
	h := w.Header()
	ctype := mime.TypeByExtension(path.Ext(name))
	if strings.HasSuffix(name, ".mjs") || strings.HasSuffix(name, ".js") {
		ctype = "text/javascript; charset=utf-8"
	} else if strings.HasPrefix(name, "vendor/LICENSE.") {
		ctype = "text/plain; charset=utf-8"
	}
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache") // revalidate: the files change with the binary
	h.Set("ETag", etag)
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

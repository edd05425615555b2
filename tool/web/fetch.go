package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// errTimeout is the cause of a request's context when its own timeout,
// not the caller, ended it.
var errTimeout = errors.New("request timed out")

// page is one fetched URL, rendered as text for the model.
type page struct {
	// finalURL is where the last redirect led.
	finalURL string
	// mediaType is the response's content type without parameters.
	mediaType string
	// title is the HTML title, if any.
	title string
	// text is Markdown (HTML) or the body as text, not yet capped.
	text string
	// hidden is the text the page hid from people, removed from text.
	hidden hiddenReport
	// bodyTruncated is set when the body exceeded Config.MaxBytes and
	// only the first MaxBytes were read.
	bodyTruncated bool
}

// contentKind is how a response body is turned into text.
type contentKind int

const (
	kindUnknown contentKind = iota
	kindHTML
	kindText
	kindBinary
)

// sniffLen is how much of a body is read to sniff its type when the
// header does not say (see http.DetectContentType).
const sniffLen = 512

// parseFetchURL checks a model-given URL: absolute, http or https, with a
// host, not a literal blocked IP.
func (t *Tools) parseFetchURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("the URL is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid URL: %w", raw, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("%q has no scheme: give an absolute http:// or https:// URL", raw)
	default:
		return nil, fmt.Errorf("%q uses the %s scheme: only http and https URLs can be fetched", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%q has no host", raw)
	}
	if err := t.checkLiteralHost(u.Hostname()); err != nil {
		return nil, fmt.Errorf("refused %s: %w", u.Redacted(), err)
	}
	return u, nil
}

// fetch GETs u and renders the body as text. Every error it returns is
// meant for the model; the caller tells cancellation apart by ctx.Err().
func (t *Tools) fetch(ctx context.Context, u *url.URL) (*page, error) {
	reqCtx, cancel := context.WithTimeoutCause(ctx, t.cfg.Timeout, errTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request for %s: %w", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", t.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	resp, err := t.fetchClient.Do(req)
	if err != nil {
		return nil, t.describeFetchError(reqCtx, u, err)
	}
	defer resp.Body.Close()

	p, err := t.readPage(reqCtx, u, resp)
	if err != nil && errors.Is(context.Cause(reqCtx), errTimeout) {
		return nil, fmt.Errorf("fetch %s: timed out after %s", u.Redacted(), t.cfg.Timeout)
	}
	return p, err
}

// readPage reads and renders a response whose headers have arrived. Its
// errors name the URL.
func (t *Tools) readPage(ctx context.Context, u *url.URL, resp *http.Response) (*page, error) {
	final := resp.Request.URL
	ctype := resp.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(ctype)
	mediaType = strings.ToLower(mediaType)

	prefix := make([]byte, sniffLen)
	n, err := io.ReadFull(resp.Body, prefix)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("read body of %s: %w", u.Redacted(), err)
	}
	prefix = prefix[:n]
	kind := classifyMediaType(mediaType)
	if kind == kindUnknown {
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(prefix))
		kind = classifyMediaType(mediaType)
		ctype = ""
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(u, resp, prefix, kind)
	}
	if kind != kindHTML && kind != kindText {
		return nil, fmt.Errorf("refused %s: its content type is %s, which is binary; this tool returns only HTML (as Markdown), plain text, JSON and XML",
			u.Redacted(), displayType(mediaType))
	}

	body, truncated, err := readLimited(io.MultiReader(bytes.NewReader(prefix), resp.Body), t.cfg.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("read body of %s: %w", u.Redacted(), err)
	}
	p := &page{finalURL: final.Redacted(), mediaType: mediaType, bodyTruncated: truncated}
	if kind == kindText {
		p.text = decodeText(body, ctype)
		return p, nil
	}
	p.title, p.text, p.hidden, err = htmlToMarkdown(ctx, body, ctype, final)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", u.Redacted(), err)
	}
	return p, nil
}

// statusError describes a non-2xx response, with the start of its body
// when that is text (APIs explain themselves there).
func statusError(u *url.URL, resp *http.Response, prefix []byte, kind contentKind) error {
	msg := fmt.Sprintf("%s answered HTTP %s", u.Redacted(), resp.Status)
	text := ""
	switch kind {
	case kindText:
		text = collapseSpace(decodeText(prefix, ""))
	case kindHTML:
		text = htmlText(prefix)
	}
	if text != "" {
		msg += ": " + excerpt(text, 300)
	}
	return errors.New(msg)
}

// describeFetchError turns a transport error into a message the model can
// act on.
func (t *Tools) describeFetchError(reqCtx context.Context, u *url.URL, err error) error {
	var blocked *BlockedAddressError
	switch {
	case errors.As(err, &blocked):
		return fmt.Errorf("refused %s: %w", u.Redacted(), blocked)
	case errors.Is(err, errTooManyRedirects):
		return fmt.Errorf("fetch %s: too many redirects (the limit is %d)", u.Redacted(), t.cfg.MaxRedirects)
	case errors.Is(context.Cause(reqCtx), errTimeout):
		return fmt.Errorf("fetch %s: timed out after %s", u.Redacted(), t.cfg.Timeout)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // drop the repeated `Get "URL":` prefix
	}
	return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
}

// classifyMediaType says how a content type becomes text.
func classifyMediaType(mt string) contentKind {
	switch {
	case mt == "" || mt == "application/octet-stream":
		return kindUnknown
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/x-javascript", mt == "application/ecmascript",
		mt == "application/x-ndjson", mt == "application/yaml", mt == "application/x-yaml",
		mt == "application/toml", mt == "application/sql", mt == "application/x-sh":
		return kindText
	}
	return kindBinary
}

// displayType names a media type for a message.
func displayType(mt string) string {
	if mt == "" {
		return "unknown"
	}
	return mt
}

// readLimited reads at most max bytes of r and says whether there was
// more.
func readLimited(r io.Reader, max int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > max {
		return b[:max], true, nil
	}
	return b, false, nil
}

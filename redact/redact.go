// Package redact masks secrets in text before Ava stores or shows it. One
// [Redactor], built once from the configuration and the environment, is
// shared by everything that keeps or delivers text: the event hub (so the
// events table, the audit log, the session files and live subscribers all
// see the same masked event), the store (messages, run results and
// errors, pending spawns, memory) and the log writers.
//
// It masks:
//   - configured secret values (provider keys, the daemon token, the
//     Telegram token) and the values of environment variables whose names
//     look secret (*_KEY, *_TOKEN, *_SECRET, *_PASS, *PASSWORD*, …), as
//     they are and as they appear inside a JSON string;
//   - passwords of URLs found in the environment (DATABASE_URL, …);
//   - pattern-detected credentials: Anthropic, OpenAI and OpenRouter keys
//     (sk-…), bearer credentials, Telegram bot tokens, AWS access key IDs
//     (AKIA…, ASIA…), GitHub tokens (ghp_…, github_pat_…), Slack tokens
//     (xox?-…), JWTs, PEM private key blocks, the password of a URL
//     (scheme://user:pass@host keeps the user) and the value assigned to a
//     secret-looking name (AWS_SECRET_ACCESS_KEY=…, password: …).
//
// Every match becomes [Redacted]. Apart from the Redactor, [URL] is how a
// configured endpoint's URL (a hook's webhook) is shown and stored:
// scheme and host only. The input may be plain text or JSON: no
// pattern reaches across a JSON string's quotes, so masked JSON stays
// valid. Each pattern has a cheap byte test in front of it, so text
// without a candidate is returned untouched without running a regular
// expression; the package's benchmark measures a typical event.
package redact

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Redacted replaces every secret a [Redactor] finds.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest configured secret value that is masked;
// shorter values would mask ordinary words.
const minSecretLen = 6

// minEnvSecretLen is the shortest value of a secret-named environment
// variable that is masked: such variables are not chosen by Ava, and a
// short value (ON, 1, a port) is no secret worth masking everywhere.
const minEnvSecretLen = 8

// Options are what a Redactor masks besides its patterns.
type Options struct {
	// Secrets are values masked wherever they appear (the configured
	// provider keys and tokens). Values shorter than six bytes are
	// ignored.
	Secrets []string
	// Environ is an environment (os.Environ's "NAME=value" form): the
	// values of variables whose names look secret (see [SecretName]) and
	// the passwords of URLs in any variable are masked too. The package
	// never reads the environment itself.
	Environ []string
}

// Redactor masks secrets in text (see the package doc). The zero value
// masks the patterns only; a nil *Redactor masks nothing. A Redactor is
// safe for concurrent use.
type Redactor struct {
	secrets []needle // longest first, so a secret containing another goes first
}

// needle is a secret value with the index of its rarest byte: searching
// for that byte first finds the few places worth comparing, where
// searching for a common first letter would stop at every word.
type needle struct {
	text []byte
	at   int
}

// newNeedle returns the needle of s.
func newNeedle(s string) needle {
	n := needle{text: []byte(s)}
	for i := range len(s) {
		if commonness(s[i]) < commonness(s[n.at]) {
			n.at = i
		}
	}
	return n
}

// commonness ranks how often a byte appears in ordinary text and JSON:
// higher is more often.
func commonness(c byte) int {
	switch {
	case c == ' ' || c == '"' || c == 'e' || c == 't' || c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 's':
		return 3
	case 'a' <= c && c <= 'z', c == ':' || c == ',' || c == '.':
		return 2
	case '0' <= c && c <= '9', c == '-' || c == '_' || c == '/':
		return 1
	}
	return 0
}

// in reports whether the needle occurs in b.
func (n needle) in(b []byte) bool {
	rare, tail := n.text[n.at], len(n.text)-n.at
	for i := n.at; i+tail <= len(b); i++ {
		j := bytes.IndexByte(b[i:len(b)-tail+1], rare)
		if j < 0 {
			return false
		}
		i += j
		if bytes.Equal(b[i-n.at:i-n.at+len(n.text)], n.text) {
			return true
		}
	}
	return false
}

// New returns a redactor for the given secret values and environment.
func New(opts Options) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, s := range opts.Secrets {
		r.add(s, minSecretLen, seen)
	}
	for _, s := range EnvSecrets(opts.Environ) {
		r.add(s, minEnvSecretLen, seen)
	}
	slices.SortFunc(r.secrets, func(a, b needle) int { return len(b.text) - len(a.text) })
	return r
}

// add registers s, and s as written inside a JSON string, when at least
// minLen bytes long.
func (r *Redactor) add(s string, minLen int, seen map[string]bool) {
	forms := []string{s}
	if esc, err := json.Marshal(s); err == nil {
		forms = append(forms, string(esc[1:len(esc)-1]))
	}
	for _, f := range forms {
		if len(f) >= minLen && !seen[f] {
			seen[f] = true
			r.secrets = append(r.secrets, newNeedle(f))
		}
	}
}

// Redact returns text with every secret masked. It returns text itself
// (not a copy) when there is nothing to mask, and never modifies text in
// place. A nil Redactor returns text unchanged.
func (r *Redactor) Redact(text []byte) []byte {
	if r == nil || len(text) == 0 {
		return text
	}
	for _, s := range r.secrets {
		if s.in(text) {
			text = bytes.ReplaceAll(text, s.text, []byte(Redacted))
		}
	}
	for _, p := range patterns {
		text = p.apply(text)
	}
	return text
}

// String is Redact for strings.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	in := []byte(s)
	out := r.Redact(in)
	if len(out) == len(in) && &out[0] == &in[0] {
		return s // nothing masked
	}
	return string(out)
}

// JSON is Redact for a JSON document; nil stays nil.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	return r.Redact(raw)
}

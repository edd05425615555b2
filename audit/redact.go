package audit

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
)

// Redacted replaces every secret the [Redactor] finds.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest configured secret value that is masked;
// shorter values would mask ordinary words.
const minSecretLen = 6

// SecretEnvVars lists the environment variables whose values are secrets.
// The caller reads them and passes the values in Options.Secrets (the
// audit package never reads the environment).
var SecretEnvVars = []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY",
	"AVA_TOKEN", "TELEGRAM_BOT_TOKEN", "BRAVE_API_KEY", "TAVILY_API_KEY"}

// start is where a secret may begin: at a word boundary or right after
// a JSON escape such as \n (whose letter would hide the boundary). It is
// group 1 of every pattern and kept in the output.
const start = `(\\[nrtbf]|\b)`

var (
	// skKey matches Anthropic (sk-ant-…), OpenAI (sk-…, sk-proj-…) and
	// OpenRouter (sk-or-…) keys.
	skKey = regexp.MustCompile(start + `sk-[A-Za-z0-9_\-]{16,}`)
	// bearer matches an HTTP bearer credential; the word "Bearer" is kept.
	bearer = regexp.MustCompile(start + `((?i:bearer)\s+)[A-Za-z0-9._~+/\-]{8,}=*`)
	// telegramToken matches a Telegram bot token (bot ID, colon, secret),
	// also inside an API URL (…/bot123456:ABC…/sendMessage).
	telegramToken = regexp.MustCompile(`(\\[nrtbf]|\b|bot)[0-9]{6,12}:[A-Za-z0-9_\-]{30,}`)
)

// Redactor masks secrets in log lines: the configured secret values (as
// they are and as they appear inside a JSON string) and anything shaped
// like an API key (sk-…, sk-ant-…), a bearer credential or a Telegram bot
// token. Every match becomes [Redacted]. Lines without any candidate are
// returned untouched without running a regular expression. A Redactor is
// safe for concurrent use.
type Redactor struct {
	secrets [][]byte // longest first, so a secret containing another goes first
}

// NewRedactor returns a redactor for the given secret values. Empty values
// and values shorter than six bytes are ignored.
func NewRedactor(secrets []string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecretLen && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, []byte(s))
		}
	}
	for _, s := range secrets {
		add(s)
		if esc, err := json.Marshal(s); err == nil {
			add(string(esc[1 : len(esc)-1]))
		}
	}
	slices.SortFunc(r.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

// Redact returns line with every secret masked. It may return line itself
// when there is nothing to mask.
func (r *Redactor) Redact(line []byte) []byte {
	if r == nil {
		return line
	}
	for _, s := range r.secrets {
		if bytes.Contains(line, s) {
			line = bytes.ReplaceAll(line, s, []byte(Redacted))
		}
	}
	if bytes.Contains(line, []byte("sk-")) {
		line = skKey.ReplaceAll(line, []byte("${1}"+Redacted))
	}
	if bytes.Contains(line, []byte("earer")) || bytes.Contains(line, []byte("EARER")) {
		line = bearer.ReplaceAll(line, []byte("${1}${2}"+Redacted))
	}
	if maybeTelegramToken(line) {
		line = telegramToken.ReplaceAll(line, []byte("${1}"+Redacted))
	}
	return line
}

// RedactString is Redact for strings.
func (r *Redactor) RedactString(s string) string { return string(r.Redact([]byte(s))) }

// maybeTelegramToken is a cheap test for a colon preceded by six digits,
// the only place a Telegram token can start.
func maybeTelegramToken(line []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(line[i:], ':')
		if j < 0 {
			return false
		}
		i += j
		if i >= 6 && isDigits(line[i-6:i]) {
			return true
		}
		i++
	}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

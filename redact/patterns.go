package redact

import (
	"bytes"
	"regexp"

	"github.com/avaagent/ava/internal/lazyre"
)

// pattern is one credential format. Every expression starts with a
// literal, so Go's regexp jumps from one occurrence of it to the next
// instead of trying every byte; what the expression cannot say cheaply
// (a word boundary before the match) is checked by before.
type pattern struct {
	name string
	// maybe is a cheap test that must hold for a match to be possible;
	// nil means always try.
	maybe func(b []byte) bool
	// re finds candidates; its group 1, when present, is kept and only
	// the rest of the match is masked. It is compiled at its first use
	// (lazyre: most texts never get past a pattern's maybe).
	re func() *regexp.Regexp
	// find replaces re for a pattern no expression says well; it returns
	// locations as FindAllSubmatchIndex does.
	find func(b []byte) [][]int
	// before must hold at a match's start; nil means anywhere.
	before func(b []byte, i int) bool
	// suffix follows Redacted in the output.
	suffix string
}

// apply returns b with every match masked; b itself when none.
func (p *pattern) apply(b []byte) []byte {
	if p.maybe != nil && !p.maybe(b) {
		return b
	}
	var locs [][]int
	if p.find != nil {
		locs = p.find(b)
	} else {
		locs = p.re().FindAllSubmatchIndex(b, -1)
	}
	var out []byte
	last := 0
	for _, loc := range locs {
		if p.before != nil && !p.before(b, loc[0]) {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		keep := loc[0]
		if len(loc) >= 4 && loc[3] >= 0 {
			keep = loc[3]
		}
		out = append(out, b[last:keep]...)
		out = append(out, Redacted...)
		out = append(out, p.suffix...)
		last = loc[1]
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// patterns are tried in order on every text. The PEM block goes first:
// its body would otherwise be cut into pieces by the others.
var patterns = []*pattern{
	{
		name:  "PEM private key block",
		maybe: contains("PRIVATE KEY-----"),
		// A complete block, or (cut short, as in a truncated tool output)
		// its header and as much of the body as follows it. [^"] keeps
		// the match inside one JSON string.
		re: lazyre.New(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[^"]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|(?:[A-Za-z0-9+/=:,\-\t\r\n ]|\\[nrt])*)`),
	},
	{
		name:   "Anthropic, OpenAI or OpenRouter key",
		maybe:  maybeSKKey,
		re:     lazyre.New(`sk-[A-Za-z0-9_\-]{16,}`),
		before: wordStart,
	},
	{name: "bearer credential", maybe: anyOf("bearer", "Bearer"), re: lazyre.New(`(earer\s+)[A-Za-z0-9._~+/\-]{8,}=*`), before: afterB},
	{name: "bearer credential", maybe: contains("EARER"), re: lazyre.New(`(EARER\s+)[A-Za-z0-9._~+/\-]{8,}=*`), before: afterB},
	{
		name:  "Telegram bot token",
		maybe: maybeTelegramToken,
		re:    lazyre.New(`[0-9]{6,12}:[A-Za-z0-9_\-]{30,}`),
		// Also inside an API URL (…/bot123456:ABC…/sendMessage).
		before: func(b []byte, i int) bool { return wordStart(b, i) || bytes.HasSuffix(b[:i], []byte("bot")) },
	},
	{name: "AWS access key ID", maybe: contains("AKIA"), re: lazyre.New(`AKIA[A-Z0-9]{16}\b`), before: wordStart},
	{name: "AWS temporary access key ID", maybe: contains("ASIA"), re: lazyre.New(`ASIA[A-Z0-9]{16}\b`), before: wordStart},
	{name: "GitHub token", maybe: maybeGitHubToken, re: lazyre.New(`gh[pousr]_[A-Za-z0-9]{30,255}\b`), before: wordStart},
	{name: "GitHub fine-grained token", maybe: containsAt("github_pat_", 6), re: lazyre.New(`github_pat_[A-Za-z0-9_]{22,255}\b`), before: wordStart},
	{name: "Slack token", maybe: contains("xox"), re: lazyre.New(`xox[abprs]-[A-Za-z0-9\-]{10,}`), before: wordStart},
	{
		name:   "JWT",
		maybe:  containsAt("eyJ", 2),
		re:     lazyre.New(`eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
		before: wordStart,
	},
	{
		// scheme://user:[REDACTED]@host: the user is kept.
		name:   "URL credentials",
		maybe:  maybeURLCredentials,
		re:     lazyre.New(`(://[^\s:/@"'\\]*:)[^\s/@"'\\]+@`),
		suffix: "@",
	},
	{name: "secret assignment", find: findAssignments},
}

// isWord reports whether c can be part of a word.
func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// wordStart reports whether a word may begin at i: at the start, after a
// byte that is not part of a word, or right after a JSON escape such as
// \n (whose letter would hide the boundary).
func wordStart(b []byte, i int) bool {
	if i == 0 || !isWord(b[i-1]) {
		return true
	}
	return i >= 2 && b[i-2] == '\\' && bytes.IndexByte([]byte("nrtbf"), b[i-1]) >= 0
}

// afterB reports whether the match at i ("earer…") is the word "bearer".
func afterB(b []byte, i int) bool {
	return i >= 1 && (b[i-1] == 'b' || b[i-1] == 'B') && wordStart(b, i-1)
}

// maybeTelegramToken is a cheap test for a colon preceded by six digits,
// the only place a Telegram token can start.
func maybeTelegramToken(b []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], ':')
		if j < 0 {
			return false
		}
		i += j
		if i >= 6 && isDigits(b[i-6:i]) {
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

// contains returns a cheap test for a literal every match holds.
func contains(lit string) func(b []byte) bool {
	l := []byte(lit)
	return func(b []byte) bool { return bytes.Contains(b, l) }
}

// containsAt is contains for a literal whose first bytes are common
// (the "s" of "sk-"): it searches from the rarer byte at index at, which
// bytes.Index finds with far fewer false starts, and checks what
// precedes it.
func containsAt(lit string, at int) func(b []byte) bool {
	head, tail := []byte(lit[:at]), []byte(lit[at:])
	return func(b []byte) bool {
		for i := 0; ; {
			j := bytes.Index(b[i:], tail)
			if j < 0 {
				return false
			}
			i += j
			if i >= len(head) && bytes.Equal(b[i-len(head):i], head) {
				return true
			}
			i++
		}
	}
}

// anyOf returns a cheap test for any of the literals.
func anyOf(lits ...string) func(b []byte) bool {
	return func(b []byte) bool {
		for _, l := range lits {
			if bytes.Contains(b, []byte(l)) {
				return true
			}
		}
		return false
	}
}

// maybeGitHubToken is a cheap test for "gh" and a token kind letter
// followed by '_'.
func maybeGitHubToken(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("gh"))
		if j < 0 {
			return false
		}
		i += j
		if i+3 < len(b) && b[i+3] == '_' && bytes.IndexByte([]byte("pousr"), b[i+2]) >= 0 {
			return true
		}
		i += 2
	}
}

// maybeURLCredentials is a cheap test for "://" followed, before any
// slash, space or quote, by an '@'.
func maybeURLCredentials(b []byte) bool {
	if bytes.IndexByte(b, '@') < 0 {
		return false
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("://"))
		if j < 0 {
			return false
		}
		i += j + 3
		for k := i; k < len(b); k++ {
			c := b[k]
			if c == '@' {
				return true
			}
			if c == '/' || c == ' ' || c == '"' || c == '\\' || c == '\n' {
				break
			}
		}
	}
}

// maybeSKKey is a cheap test for "sk-" followed by sixteen key bytes
// ("risk-management" has the literal but not the key).
func maybeSKKey(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("k-"))
		if j < 0 {
			return false
		}
		i += j
		if i >= 1 && b[i-1] == 's' && keyRun(b[i+2:]) >= 16 {
			return true
		}
		i += 2
	}
}

// keyRun is how many bytes at the start of b can be part of a key
// (letters, digits, '_' and '-').
func keyRun(b []byte) int {
	for n, c := range b {
		if !isWord(c) && c != '-' {
			return n
		}
	}
	return len(b)
}

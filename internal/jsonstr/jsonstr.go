// Package jsonstr writes a Go string as a JSON string, byte for byte as
// encoding/json writes it, for the encoders that write JSON directly
// instead of by reflection (an event's line, a model request's body).
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// safe marks the ASCII bytes a JSON string holds as they are;
// htmlUnsafe those encoding/json escapes besides when it escapes HTML.
var (
	safe       = safeASCII()
	htmlUnsafe = [utf8.RuneSelf]bool{'<': true, '>': true, '&': true}
)

func safeASCII() (set [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		set[c] = c != '"' && c != '\\'
	}
	return set
}

// Append appends s quoted as encoding/json quotes a string: control
// characters, quotes and backslashes escaped, invalid UTF-8 as U+FFFD,
// U+2028 and U+2029 escaped, and <, > and & escaped only when html is
// set (json.Marshal sets it; an Encoder may turn it off, as the OpenAI
// SDK's does).
func Append(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] && (!html || !htmlUnsafe[c]) {
				i++
				continue
			}
			b = appendEscape(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// appendEscape appends the escape of an ASCII byte that needs one.
func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

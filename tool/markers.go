package tool

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A marker is a bracket followed by the word "untrusted", as a reader
// (a model) would see it. Text is folded before it is compared:
//
//   - compatibility forms are decomposed (NFKD: full-width "ｕ" is "u",
//     "〈" U+2329 is "〈" U+3008) and combining marks dropped ("ú" is
//     "u");
//   - letters are lowered and the look-alikes of the letters of
//     "untrusted" (Cyrillic "е", Greek "τ", small capitals, …) and of
//     the brackets ("ᐸ", "˂", "❮", …) are mapped to their Latin form
//     (lookalike);
//   - characters that show nothing (NUL and other controls, zero-width
//     and other format characters) are skipped wherever they are;
//   - between the bracket and the word, up to maxMarkerGap characters
//     that are not letters ("/", spaces, "\0", punctuation) are allowed.
//
// The table is small on purpose: it covers the brackets and the nine
// letters that matter, not Unicode's whole confusables list.

// maxMarkerGap is how many non-letter characters may stand between a
// marker's bracket and its word ("< / untrusted" has three).
const maxMarkerGap = 8

// markerWord is the word a marker's bracket is followed by.
const markerWord = "untrusted"

// lookalike maps characters that look like '<', '/' or a letter of
// "untrusted" to that character (after NFKD and lowering). Every
// character whose NFKD form is '<' (with or without a combining mark) is
// in it too, so that isBracket needs no normalisation.
var lookalike = map[rune]rune{
	// '<'
	'\u2039': '<', '\u00AB': '<', '\u3008': '<', '\u27E8': '<', '\u27EA': '<', '\u300A': '<',
	'\u1438': '<', '\u02C2': '<', '\u276E': '<', '\u276C': '<', '\u2770': '<', '\u29FC': '<',
	'\u227A': '<', '\u22D6': '<', '\u226E': '<', '\u1445': '<', '\u16B2': '<', '\u2329': '<', '\uFE64': '<', '\uFF1C': '<',
	// '/'
	'\u2044': '/', '\u2215': '/', '\u29F8': '/', '\u2571': '/', '\u27CB': '/', '\u3033': '/',
	'\u30CE': '/', '\u4E3F': '/', '\u2CC6': '/', '\u1735': '/', '\uFF0F': '/',
	// 'u'
	'\u03C5': 'u', '\u057D': 'u', '\u1D1C': 'u', '\u028B': 'u', '\uA79F': 'u', '\u0446': 'u',
	// 'n'
	'\u0578': 'n', '\u057C': 'n', '\u0274': 'n', '\u043F': 'n', '\u03B7': 'n',
	// 't'
	'\u0442': 't', '\u03C4': 't', '\u1D1B': 't', '\u01AD': 't',
	// 'r'
	'\u0433': 'r', '\u1D26': 'r', '\u0280': 'r', '\u027C': 'r', '\u1D0B': 'r',
	// 's'
	'\u0455': 's', '\uA731': 's', '\u01BD': 's', '\u0282': 's',
	// 'e'
	'\u0435': 'e', '\u04BD': 'e', '\u1D07': 'e', '\u212E': 'e', '\u0454': 'e', '\u03B5': 'e', '\u0450': 'e', '\u0451': 'e',
	// 'd'
	'\u0501': 'd', '\u13E7': 'd', '\u0257': 'd', '\u1D05': 'd', '\u217E': 'd',
}

// escapeMarkers replaces the bracket of every marker in text with
// "&lt;".
func escapeMarkers(text string) string {
	var b strings.Builder
	last := 0
	for i, r := range text {
		if !isBracket(r) || !followedByWord(text[i+utf8.RuneLen(r):]) {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(text) + 8)
		}
		b.WriteString(text[last:i])
		b.WriteString("&lt;")
		last = i + utf8.RuneLen(r)
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// isBracket reports whether r reads as '<'.
func isBracket(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '<'
	}
	return lookalike[r] == '<'
}

// followedByWord reports whether rest starts, as folded, with at most
// maxMarkerGap non-letters and then markerWord.
func followedByWord(rest string) bool {
	gap, matched := 0, 0
	var buf [8]rune
	for _, r := range rest {
		for _, c := range fold(buf[:0], r) {
			switch {
			case matched > 0 || isLetter(c):
				if c != rune(markerWord[matched]) {
					return false
				}
				if matched++; matched == len(markerWord) {
					return true
				}
			default:
				if gap++; gap > maxMarkerGap {
					return false
				}
			}
		}
	}
	return false
}

// isLetter reports a folded letter.
func isLetter(c rune) bool { return unicode.IsLetter(c) }

// fold appends r as a reader sees it to dst: nothing for a character
// that shows nothing, else its NFKD form without combining marks,
// lowered, with look-alikes mapped (see the comment at the top of the
// file).
func fold(dst []rune, r rune) []rune {
	if r < utf8.RuneSelf {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			return append(dst, ' ')
		case r < 0x20 || r == 0x7f:
			return dst
		case 'A' <= r && r <= 'Z':
			return append(dst, r+'a'-'A')
		}
		return append(dst, r)
	}
	if invisible(r) || unicode.Is(unicode.Mn, r) {
		return dst
	}
	if to, ok := lookalike[r]; ok {
		return append(dst, to)
	}
	for _, d := range norm.NFKD.String(string(r)) {
		if unicode.Is(unicode.Mn, d) {
			continue
		}
		d = unicode.ToLower(d)
		if to, ok := lookalike[d]; ok {
			d = to
		}
		dst = append(dst, d)
	}
	return dst
}

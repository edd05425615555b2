package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A session's title is what the sessions menu shows instead of its key:
// its first user message's first line, cut (TitleFrom), until the person
// renames it (SessionStore.SetSessionTitle, checked by CheckTitle).

// MaxTitleRunes bounds a title a person sets.
const MaxTitleRunes = 120

// autoTitleRunes is how much of the first message a default title keeps.
const autoTitleRunes = 60

// ErrBadTitle means a title a person set is empty or too long.
var ErrBadTitle = errors.New("bad session title")

// TitleFrom is the default title of a session whose first user message
// is text: its first non-blank line, spaces collapsed, cut to 60
// characters with "…"; "" for a blank text.
func TitleFrom(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if t := strings.Join(strings.FieldsFunc(line, isTitleSpace), " "); t != "" {
			return cutRunes(t, autoTitleRunes)
		}
	}
	return ""
}

// CheckTitle returns the title a person set, spaces collapsed, or an
// error wrapping ErrBadTitle when it is empty or longer than
// MaxTitleRunes characters.
func CheckTitle(title string) (string, error) {
	t := strings.Join(strings.FieldsFunc(title, isTitleSpace), " ")
	if t == "" {
		return "", fmt.Errorf("%w: empty", ErrBadTitle)
	}
	if n := utf8.RuneCountInString(t); n > MaxTitleRunes {
		return "", fmt.Errorf("%w: %d characters, more than %d", ErrBadTitle, n, MaxTitleRunes)
	}
	return t, nil
}

// isTitleSpace separates a title's words: spaces and control characters
// (a title is one line).
func isTitleSpace(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// cutRunes cuts s to at most n characters, the last an ellipsis when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

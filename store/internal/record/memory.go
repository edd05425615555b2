package record

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/avaagent/ava/store"
)

// DefaultMemoryLimit is how many memories SearchMemory and RecentMemory
// return when limit is 0.
const DefaultMemoryLimit = 10

// maxSearchTerms bounds how many words of a query are searched for.
const maxSearchTerms = 32

// minPrefixTermLen is the shortest term also matched as a word prefix
// ("deploy" finds "deployment"); shorter ones would match too much.
const minPrefixTermLen = 3

// NormalizeTags trims tags and drops empty and repeated ones, keeping
// their order.
func NormalizeTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// CheckMemory refuses a memory without content, masks it, normalises its
// tags and sets its CreatedAt when zero.
func (c Checker) CheckMemory(m *store.Memory) error {
	if strings.TrimSpace(m.Content) == "" {
		return errors.New("content is empty")
	}
	c.Mask.Memory(m)
	m.Tags = NormalizeTags(m.Tags)
	m.CreatedAt = c.OrNow(m.CreatedAt).UTC()
	return nil
}

// MemoryLimit applies the default to limit and refuses a negative one.
func MemoryLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("limit must be >= 0, got %d", limit)
	case limit == 0:
		return DefaultMemoryLimit, nil
	}
	return limit, nil
}

// Words splits text into words the way SQLite's unicode61 tokenizer
// does: runs of letters, digits and marks; everything else separates.
func Words(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
}

// AnyOf is a search query matching any of words: each word quoted by
// quote, so nothing in it is read as query syntax, words of three or
// more characters followed by prefix to match as prefixes too, repeated
// terms dropped, at most 32 terms, joined by or. No words give "".
func AnyOf(words []string, quote func(string) string, prefix, or string) string {
	var terms []string
	for _, w := range words {
		q := quote(w)
		if utf8.RuneCountInString(w) >= minPrefixTermLen {
			q += prefix
		}
		if !slices.Contains(terms, q) {
			terms = append(terms, q)
		}
		if len(terms) == maxSearchTerms {
			break
		}
	}
	return strings.Join(terms, or)
}

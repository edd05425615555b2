package audit

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/event"
)

// matcher applies a Query to lines. prefilter is a cheap test on the raw
// line that never rejects a matching entry (each needle is the JSON form
// the writer gives the value); match is the exact test on the decoded
// event.
type matcher struct {
	q                 Query
	types             [][]byte // quoted type names, any of which must occur
	needles           [][]byte // quoted agent, session and user; all must occur
	since, until      []byte   // timestamp bounds in the writer's layout
	search, searchEsc []byte   // lower-cased search text, raw and JSON-escaped
	asciiSearch       bool
	fold              []byte // scratch for case folding
}

func newMatcher(q Query) *matcher {
	m := &matcher{q: q}
	for _, t := range q.Types {
		m.types = append(m.types, quoted(string(t)))
	}
	for _, v := range []string{q.Agent, q.Session, q.User} {
		if v != "" {
			m.needles = append(m.needles, quoted(v))
		}
	}
	if !q.Since.IsZero() {
		m.since = []byte(q.Since.UTC().Truncate(time.Millisecond).Format(event.TimeLayout))
	}
	if !q.Until.IsZero() {
		m.until = []byte(q.Until.UTC().Truncate(time.Millisecond).Format(event.TimeLayout))
	}
	if q.Search != "" {
		m.search = bytes.ToLower([]byte(q.Search))
		esc := quoted(q.Search)
		m.searchEsc = bytes.ToLower(esc[1 : len(esc)-1])
		m.asciiSearch = isASCII(m.search) && isASCII(m.searchEsc)
	}
	return m
}

// quoted is v as a JSON string, as the writer encodes it.
func quoted(v string) []byte {
	b, _ := json.Marshal(v) // a string always marshals
	return b
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// prefilter reports whether raw may match; false means it cannot.
func (m *matcher) prefilter(raw []byte) bool {
	if len(m.types) > 0 && !slices.ContainsFunc(m.types, func(t []byte) bool { return bytes.Contains(raw, t) }) {
		return false
	}
	for _, n := range m.needles {
		if !bytes.Contains(raw, n) {
			return false
		}
	}
	if (m.since != nil || m.until != nil) && !m.timeMayMatch(raw) {
		return false
	}
	return m.search == nil || m.searchMatches(raw)
}

var timestampKey = []byte(`"timestamp":"`)

// timeMayMatch compares the line's timestamp as text: the writer's layout
// (UTC, fixed width) sorts like the times it encodes. Lines in any other
// form pass, for match to decide.
func (m *matcher) timeMayMatch(raw []byte) bool {
	i := bytes.Index(raw, timestampKey)
	n := len(event.TimeLayout) - len("Z07:00") + 1 // "2006-01-02T15:04:05.000Z"
	if i < 0 || len(raw) < i+len(timestampKey)+n {
		return true
	}
	ts := raw[i+len(timestampKey) : i+len(timestampKey)+n]
	if ts[n-1] != 'Z' {
		return true
	}
	if m.since != nil && bytes.Compare(ts, m.since) < 0 {
		return false
	}
	return m.until == nil || bytes.Compare(ts, m.until) <= 0
}

// searchMatches is a case-insensitive substring test on the raw line; the
// search text matches as typed or as it appears escaped inside JSON.
func (m *matcher) searchMatches(raw []byte) bool {
	var line []byte
	if m.asciiSearch {
		m.fold = append(m.fold[:0], raw...)
		for i, c := range m.fold {
			if c >= 'A' && c <= 'Z' {
				m.fold[i] = c + 'a' - 'A'
			}
		}
		line = m.fold
	} else {
		line = bytes.ToLower(raw)
	}
	return bytes.Contains(line, m.search) || bytes.Contains(line, m.searchEsc)
}

// match is the exact test on a decoded event.
func (m *matcher) match(ev event.Event) bool {
	q := m.q
	switch {
	case q.Agent != "" && ev.Agent != q.Agent,
		q.Session != "" && ev.Session != q.Session,
		q.User != "" && ev.User != q.User,
		!q.Since.IsZero() && ev.Time.Before(q.Since),
		!q.Until.IsZero() && ev.Time.After(q.Until),
		len(q.Types) > 0 && !slices.Contains(q.Types, ev.Type):
		return false
	}
	return true
}
